package main

import "testing"

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 200},        // no collection yet: the heap minimum at 8 MiB
		{1 * mib, 225},  // the heap minimum at 9 MiB
		{3 * mib, 267},  // grown by 267%: 11.01 MiB (the heap minimum: 10.7 MiB)
		{6 * mib, 134},  // grown by 134%: 14.04 MiB (the heap minimum: 5.4 MiB)
		{8 * mib, 100},  // GOGC=100's own goal, 16 MiB
		{64 * mib, 100}, // a large heap: as GOGC=100
	} {
		got := gcPercentFor(c.live, 8*mib)
		if got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live/mib, got, c.want)
		}
		// The goal the runtime derives from the percentage covers the target.
		goal := max(uint64(4*mib)*uint64(got)/100, c.live+c.live*uint64(got)/100)
		if target := c.live + max(c.live, 8*mib); goal < target {
			t.Errorf("live %d MiB: goal %d < target %d", c.live/mib, goal, target)
		}
	}
}
