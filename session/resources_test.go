package session

import "testing"

// TestFDLimitCountedInTime: the open descriptors are counted before the running sessions,
// each holding the most a running session can (its terminal, exit watch, transcript,
// spill and the detector's kept files), could leave less than the reserve free.
func TestFDLimitCountedInTime(t *testing.T) {
	for _, limit := range []uint64{256, 1024, 2048, 4096, 65536} {
		for live := 0; uint64(live) <= limit; live++ {
			hold := uint64(live)*fdsPerLive + fdsPerSession + fdReserve + 256
			if hold > limit && !mayNearFDLimit(live, limit) {
				t.Fatalf("limit %d, %d running sessions (up to %d descriptors with the reserve): not counted", limit, live, hold)
			}
		}
	}
	if mayNearFDLimit(10, 1<<20) {
		t.Error("10 running sessions under a limit of 1M descriptors: counted, which costs a /proc read per start")
	}
}
