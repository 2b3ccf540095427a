package session

import (
	"os"
	"testing"
)

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

// TestOpenFDsCount: the count of open descriptors (a stat of /proc/self/fd where the
// kernel gives it) agrees with the listing of /dev/fd, and follows a descriptor opened.
// Other tests' leftovers may open or close one between the readings, so a disagreement
// is read again, a bounded number of times.
func TestOpenFDsCount(t *testing.T) {
	if _, ok := openFDs(); !ok {
		t.Skip("this system does not count open descriptors")
	}
	var n, n1, listed int
	for range 100 {
		n, _ = openFDs()
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		n1, _ = openFDs()
		listed, _ = listFDs()
		f.Close()
		if n1 == listed && n1 == n+1 {
			return
		}
	}
	t.Fatalf("open descriptors: %d before opening one, %d after, %d listed in /dev/fd", n, n1, listed)
}
