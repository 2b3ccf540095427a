package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
)

// Client.Close stops waiting when its context ends, and says so; the kill goes on.
func TestClientCloseHonoursContext(t *testing.T) {
	t.Parallel()
	testtool.KernelOnly(t, "a sleeping program reads as waiting under the quiet heuristic, so the poll returns before the kill ends it")
	m, err := NewManager(Options{NoRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	y := int64(20_000)
	// Ignores HUP and TERM: only the SIGKILL round, 2 s later, ends it.
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: "trap '' HUP TERM; echo ready; exec sleep 1000", WaitFor: "ready", YieldTimeMs: &y})
	if err != nil || r.State != StateRunning {
		t.Fatalf("exec: %v %+v", err, r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Close(ctx, false); !errors.Is(err, context.Canceled) {
		t.Errorf("Close with a cancelled context: %v, want context.Canceled", err)
	}
	// The kill went on: a poll waits for the exit.
	r, err = c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, YieldTimeMs: &y})
	if err != nil || r.State != StateExited {
		t.Errorf("after Close: %v %+v, want the session ended", err, r)
	}
}

// Manager.Close racing a manager's first start: either the start fails, or its session
// is ended by Close; nothing it started outlives Close (and -race sees no unsynchronised
// access to the reaper).
func TestManagerCloseRacesFirstStart(t *testing.T) {
	t.Parallel()
	for i := range 10 {
		marker := fmt.Sprintf("PTYHUB_LC_MARKER=%d-%d", os.Getpid(), i)
		m, err := NewManager(Options{NoRecord: true})
		if err != nil {
			t.Fatal(err)
		}
		zero := int64(0)
		k, v, _ := bytes.Cut([]byte(marker), []byte("="))
		started := make(chan error, 1)
		go func() {
			_, err := m.NewClient("t").Exec(context.Background(), ExecRequest{Argv: []string{"sleep", "1000"},
				Env: map[string]string{string(k): string(v)}, YieldTimeMs: &zero})
			started <- err
		}()
		// Not synchronisation: each round lets the start get a little further before
		// Close, so some rounds land in the window (between the start's admission and the
		// reaper it starts). The assertions hold in every round.
		time.Sleep(time.Duration(i) * 250 * time.Microsecond)
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		<-started
		if pids := proctest.WithEnv(marker); len(pids) > 0 {
			t.Errorf("round %d: processes %v outlived Manager.Close", i, pids)
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// An exec whose start waited longer than its yield window (the first exec of a manager
// starts the reaper, which a loaded machine can take seconds to run) still gives the
// program its window: a program that exits at once is reported exited, with its output,
// not running with nothing.
func TestExecYieldOpensAfterSlowStart(t *testing.T) {
	t.Parallel()
	m, err := NewManager(Options{NoRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	// The start waits for the reaper's lock, held here past the whole window. The window
	// is long enough for the command to end in on a loaded machine once it runs; the
	// lock is held a second longer, so the window the code before opened at the call's
	// start had passed before the command could run.
	y := int64(10000)
	m.rmu.Lock()
	done := make(chan *Result, 1)
	go func() {
		r, err := m.NewClient("t").Exec(context.Background(), ExecRequest{Cmd: "echo slow-start-$((6*7)); exit 3", YieldTimeMs: &y})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(time.Duration(y)*time.Millisecond + time.Second) // the slow start itself, not a synchronisation
	m.rmu.Unlock()
	r := <-done
	if r == nil {
		return
	}
	if r.State != StateExited || r.ExitCode == nil || *r.ExitCode != 3 || !bytes.Contains([]byte(r.Output), []byte("slow-start-42")) {
		t.Errorf("exec after a start slower than its window: state %s, because %s, output %q; want it exited 3 with its output", r.State, r.ReturnedBecause, r.Output)
	}
}

// kill_session with a signal that ends the leader says it exited, and how, even when the
// report of the exit takes longer than the wait for the signal's effect (a loaded
// machine: the reaper's report and the exit path are late).
func TestSignalResultWaitsForALateExitReport(t *testing.T) {
	t.Parallel()
	m, err := NewManager(Options{NoRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	// The late report itself, not a synchronisation: the exit path starts twice the
	// signal's settle after the leader died.
	m.holdExit = func() { time.Sleep(2 * signalSettle) }
	c := m.NewClient("t")
	y := int64(0)
	r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"sleep", "60"}, YieldTimeMs: &y})
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID, Signal: "TERM"})
	if err != nil {
		t.Fatal(err)
	}
	if k.State != StateExited || k.Signal != "SIGTERM" {
		t.Errorf("kill_session TERM of sleep: state %s, signal %q; want exited by SIGTERM", k.State, k.Signal)
	}
}
