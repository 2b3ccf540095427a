package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// startSleep starts a sleep that ends with the test and returns its command and its Ref.
func startSleep(t *testing.T) (*exec.Cmd, Ref) {
	t.Helper()
	cmd := exec.Command("sleep", "1021")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p, err := Stat(cmd.Process.Pid)
	if err != nil || p.Start == 0 {
		t.Fatalf("Stat(%d) = %+v, %v", cmd.Process.Pid, p, err)
	}
	return cmd, p.Ref()
}

// requireRunning fails t unless pid runs, neither stopped nor exited: no signal that ends
// or stops a sleep reached it.
func requireRunning(t *testing.T, pid int) {
	t.Helper()
	p, err := Stat(pid)
	if err != nil || p.Dead() || p.State == 'T' {
		t.Fatalf("process %d was signalled: state %q, %v", pid, p.State, err)
	}
}

// The kill path refuses a process whose start differs from the one read: the pid names
// another process than the one found (what a pid reused since looks like), so Signal,
// the kill sequence's halves and Open send it nothing. The Ref with the right start
// then reaches it.
func TestSignalRefusesAnotherStart(t *testing.T) {
	cmd, ref := startSleep(t)
	pid := cmd.Process.Pid
	for _, other := range []Ref{{pid, ref.Start + 1}, {pid, ref.Start - 1}, {pid, 0}} {
		if err := Signal(other, syscall.SIGKILL); !errors.Is(err, ErrGone) {
			t.Errorf("Signal(%+v, SIGKILL) of process %+v = %v, want ErrGone", other, ref, err)
		}
		Terminate([]Ref{other})
		if Escalate(func() []Ref { return []Ref{other} }, 0) {
			t.Errorf("Escalate reported %+v gone", other)
		}
		if p, err := Open(other); !errors.Is(err, ErrGone) {
			p.Close()
			t.Errorf("Open(%+v) = %v, want ErrGone", other, err)
		}
		requireRunning(t, pid)
	}
	if err := Signal(ref, syscall.SIGKILL); err != nil {
		t.Fatalf("Signal(%+v, SIGKILL): %v", ref, err)
	}
	cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the process ended with %v, want SIGKILL", cmd.ProcessState)
	}
}

// An exited process is gone for Signal even while its pid is held (a zombie its parent
// has not reaped), and a Process opened on it before its exit is told the exit by Wait
// and refuses to signal once it is reaped.
func TestSignalExited(t *testing.T) {
	cmd, ref := startSleep(t)
	p, err := Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !p.Wait(context.Background(), time.Now().Add(30*time.Second)) {
		t.Fatal("Wait did not see the process exit")
	}
	if err := Signal(ref, syscall.SIGTERM); !errors.Is(err, ErrGone) {
		t.Errorf("Signal of a zombie = %v, want ErrGone", err)
	}
	cmd.Wait()
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, ErrGone) {
		t.Errorf("Signal through a handle of a reaped process = %v, want ErrGone", err)
	}
}

// A process that is not ours (pid 1, root's) is refused by the kernel with EPERM, not
// taken for gone: the reaper gives such a process up by that error. Run as an ordinary
// user; root may signal anything. Signal 0 only: nothing is sent even if it were allowed.
func TestSignalNotOursIsEPERM(t *testing.T) {
	if _, done := testtool.Unprivileged(t); done {
		return
	}
	if os.Geteuid() == 0 {
		t.Skip("root may signal every process")
	}
	p, err := Stat(1)
	if err != nil {
		t.Skipf("pid 1 cannot be read here: %v", err)
	}
	if err := Signal(p.Ref(), 0); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("Signal(pid 1, 0) as uid %d = %v, want EPERM", os.Geteuid(), err)
	}
}
