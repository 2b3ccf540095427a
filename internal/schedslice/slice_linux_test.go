package schedslice

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sliceOf reads the slice of thread tid (0: the calling thread).
func sliceOf(t *testing.T, tid int) time.Duration {
	t.Helper()
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(a.Runtime)
}

// onThread runs fn on a thread of its own, which ends with it (the goroutine never
// unlocks it), so what fn sets on the thread leaves with it.
func onThread(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		fn()
	}()
	<-done
}

// customSlices skips the test on a kernel that ignores a custom slice (before 6.12).
func customSlices(t *testing.T) {
	t.Helper()
	ok := false
	onThread(func() {
		if err := Set(0, 3*time.Millisecond); err != nil {
			t.Errorf("Set: %v", err)
			return
		}
		ok = sliceOf(t, 0) == 3*time.Millisecond
	})
	if !ok && !t.Failed() {
		t.Skip("this kernel ignores sched_attr's sched_runtime for SCHED_OTHER (before Linux 6.12)")
	}
}

func TestSetKeepsNiceAndRestores(t *testing.T) {
	customSlices(t)
	onThread(func() {
		if err := Set(0, 0); err != nil {
			t.Fatal(err)
		}
		def := sliceOf(t, 0)
		tid := unix.Gettid()
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 7); err != nil {
			t.Fatal(err)
		}
		if err := Set(0, 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if got := sliceOf(t, 0); got != 5*time.Millisecond {
			t.Errorf("slice after Set(5ms) = %v", got)
		}
		if nice, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err != nil || 20-nice != 7 {
			t.Errorf("nice after Set = %d (%v), want 7 kept", 20-nice, err) // the raw call returns 20-nice
		}
		if err := Set(0, 0); err != nil {
			t.Fatal(err)
		}
		if got := sliceOf(t, 0); got != def {
			t.Errorf("slice after Set(0) = %v, want the default %v", got, def)
		}
	})
}

func TestSetProcessReachesEveryThread(t *testing.T) {
	customSlices(t)
	t.Cleanup(func() { SetProcess(0) })
	if err := SetProcess(4 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // the thread ended
		}
		if time.Duration(a.Runtime) != 4*time.Millisecond {
			t.Errorf("thread %d: slice %v, want 4ms", tid, time.Duration(a.Runtime))
		}
	}
	// A goroutine locked to a thread afterwards (a new one or one set above) has it.
	onThread(func() {
		if got := sliceOf(t, 0); got != 4*time.Millisecond {
			t.Errorf("a later thread's slice = %v, want 4ms", got)
		}
	})
}
