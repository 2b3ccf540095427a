//go:build linux

package proc

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// TestSignalNeverReachesReusedPid: once a process found in the table has exited and been
// reaped, its pid can go to an unrelated process; neither its Ref (Signal, the kill
// sequence) nor a Process opened on it before its exit (a pidfd) may reach that one. The
// test runs itself again as pid 1 of a fresh pid namespace, where it alone allocates
// pids, and hands the pid to the unrelated process by writing ns_last_pid: a real reuse,
// not a made-up start.
func TestSignalNeverReachesReusedPid(t *testing.T) {
	if os.Getenv(testtool.PidNamespaceEnv) == "" {
		t.Parallel()
		testtool.RunInPidNamespace(t, "TestSignalNeverReachesReusedPid")
		return
	}
	cmd, ref := startSleep(t)
	p, err := Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cmd.Process.Kill()
	cmd.Wait() // reaped: the pid is free
	victim := testtool.TakePid(t, ref.PID)

	if err := Signal(ref, syscall.SIGTERM); !errors.Is(err, ErrGone) {
		t.Errorf("Signal of the old process's Ref = %v, want ErrGone", err)
	}
	if err := p.Signal(syscall.SIGKILL); !errors.Is(err, ErrGone) {
		t.Errorf("Signal through the old process's handle = %v, want ErrGone", err)
	}
	if q, err := Open(ref); !errors.Is(err, ErrGone) {
		q.Close()
		t.Errorf("Open of the old process's Ref = %v, want ErrGone", err)
	}
	Terminate([]Ref{ref})
	if Escalate(func() []Ref { return []Ref{ref} }, 0) {
		t.Error("Escalate reported the old process gone while its Ref stayed listed")
	}
	victim.Check(t)
}
