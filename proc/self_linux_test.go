package proc

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// A child forked by one thread is on that thread's children list (what the reaper's
// orphan lookup relies on), and its exit status is readable by its parent.
func TestThreadChildren(t *testing.T) {
	runtime.LockOSThread() // the child is forked by this OS thread
	defer runtime.UnlockOSThread()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	kids, ok := ThreadChildren(os.Getpid(), unix.Gettid())
	if !ok {
		t.Skip("no per-thread children files in this kernel (CONFIG_PROC_CHILDREN)")
	}
	if !slices.Contains(kids, cmd.Process.Pid) {
		t.Errorf("ThreadChildren(self, this thread) = %v, no child %d", kids, cmd.Process.Pid)
	}
	if !CanReadExitStatus(cmd.Process.Pid) {
		t.Errorf("CanReadExitStatus(own child %d) = false", cmd.Process.Pid)
	}
}
