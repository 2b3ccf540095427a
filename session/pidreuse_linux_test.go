//go:build linux

package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

func TestSignalNeverHitsReusedPid(t *testing.T) {
	if os.Getenv(testtool.PidNamespaceEnv) == "" {
		t.Parallel() // the test itself runs in its own pid namespace, in a child process
		testtool.RunInPidNamespace(t, "TestSignalNeverHitsReusedPid")
		return
	}
	if os.Getpid() != 1 {
		t.Fatalf("%s is set but this process is pid %d, not the first of a new pid namespace", testtool.PidNamespaceEnv, os.Getpid())
	}
	m, c := scNewClient(t)
	for _, tty := range []bool{true, false} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"true"}, TTY: &tty, YieldTimeMs: new(int64(20000))})
			if err != nil {
				t.Fatal(err)
			}
			scUntilExit(t, c, r)
			s, err := m.lookup(r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			victim := testtool.TakePid(t, s.pid)

			for _, sig := range []string{"TERM", "INT", "HUP", "KILL"} {
				_, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID, Signal: sig})
				if !errors.Is(err, ErrExited) {
					t.Errorf("kill_session signal %s on the ended session: got %v, want %v", sig, err, ErrExited)
				}
			}
			if _, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID}); err != nil {
				t.Errorf("kill_session on the ended session: %v", err)
			}
			rp := s.rp.Load()
			if err := rp.SignalGroup(s.uuid, syscall.SIGTERM); err == nil {
				t.Errorf("the reaper signalled the group of session %s, whose leader %d is reaped", s.uuid, s.pid)
			}
			if surv, err := rp.Kill(s.uuid, 100*time.Millisecond, true); err != nil || len(surv) > 0 {
				t.Errorf("the reaper's kill of the ended session: survivors %v, error %v; want none", surv, err)
			}
			victim.Check(t)
		})
	}
}

// TestSignalNeverHitsReusedForegroundGroup: kill_session with a signal on a terminal goes
// to the terminal's foreground group while that group lives; once it has ended (and the
// program did not take the terminal back) the terminal still names it, and the signal
// must not go to that number when an unrelated process group has it. Run in a fresh pid
// namespace, like TestSignalNeverHitsReusedPid.
func TestSignalNeverHitsReusedForegroundGroup(t *testing.T) {
	if os.Getenv(testtool.PidNamespaceEnv) == "" {
		t.Parallel() // the test itself runs in its own pid namespace, in a child process
		testtool.RunInPidNamespace(t, "TestSignalNeverHitsReusedForegroundGroup")
		return
	}
	if os.Getpid() != 1 {
		t.Fatalf("%s is set but this process is pid %d, not the first of a new pid namespace", testtool.PidNamespaceEnv, os.Getpid())
	}
	// The leader gives the terminal to a child in its own group and says how it ended;
	// then to a second child that exits at once, which it reaps, says which pid that
	// child had, and waits.
	const prog = `import os, signal, sys
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
def child(r):
    c = os.fork()
    if c == 0:
        os.setpgid(0, 0)
        os.read(r, 1)
        os._exit(0)
    os.setpgid(c, c)
    os.tcsetpgrp(0, c)
    return c
r, w = os.pipe()
c = child(r)
sys.stdout.write("fg=%d;\n" % c); sys.stdout.flush()
_, st = os.waitpid(c, 0)
sys.stdout.write("ended=%d;\n" % st); sys.stdout.flush()
c = child(r)
os.write(w, b"x")
os.waitpid(c, 0)
sys.stdout.write("gone=%d;\n" % os.tcgetpgrp(0)); sys.stdout.flush()
os.read(r, 1)
`
	m, c := scNewClient(t)
	r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"python3", "-c", prog}, WaitFor: `^fg=[0-9]+;`, YieldTimeMs: new(int64(20000))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID, Signal: "TERM"}); err != nil {
		t.Fatalf("kill_session signal TERM to the live foreground group: %v", err)
	}
	r, err = c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, WaitFor: `^gone=[0-9]+;`, YieldTimeMs: new(int64(20000))})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Output, "ended=15;") {
		t.Fatalf("the live foreground group did not get SIGTERM (want ended=15): %q", r.Output)
	}
	_, rest, ok := strings.Cut(r.Output, "gone=")
	num, _, ok2 := strings.Cut(rest, ";")
	fg, err := strconv.Atoi(num)
	if !ok || !ok2 || err != nil {
		t.Fatalf("the program did not say its ended foreground group: %q", r.Output)
	}
	s, err := m.lookup(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.master.ForegroundPgrp(); err != nil || got != fg {
		t.Fatalf("the terminal's foreground group is %d (%v), want the ended group %d", got, err, fg)
	}
	victim := testtool.TakePid(t, fg)
	if _, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID, Signal: "TERM"}); err != nil {
		t.Errorf("kill_session signal TERM: %v", err)
	}
	victim.Check(t)
}
