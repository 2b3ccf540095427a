package reaper

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/internal/schedslice"
)

// TestSpawnedProgramsGetTheDefaultSlice: a manager whose threads run with a longer time
// slice (ptyhub mcp and serve do) starts a reaper, which inherits it; the programs of
// its sessions must not: they get the kernel's default slice.
func TestSpawnedProgramsGetTheDefaultSlice(t *testing.T) {
	var def time.Duration
	custom := false
	done := make(chan struct{})
	go func() { // on a thread of its own, which ends with the goroutine
		defer close(done)
		runtime.LockOSThread()
		if schedslice.Set(0, 0) != nil {
			return
		}
		a, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			return
		}
		def = time.Duration(a.Runtime)
		schedslice.Set(0, 3*time.Millisecond)
		if a, err := unix.SchedGetAttr(0, 0); err == nil && a.Runtime == uint64(3*time.Millisecond) {
			custom = true
		}
	}()
	<-done
	if !custom {
		t.Skip("this kernel ignores sched_attr's sched_runtime for SCHED_OTHER (before Linux 6.12)")
	}
	if err := schedslice.SetProcess(3 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { schedslice.SetProcess(0) })
	r := startReaper(t)
	m, pid, exit := spawnPTY(t, r, "slice", "sleep", "30")
	a, err := unix.SchedGetAttr(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(a.Runtime); got != def {
		t.Errorf("the session's program runs with a slice of %v, want the default %v", got, def)
	}
	m.Close()
	r.Close(10 * time.Second)
	<-exit
}
