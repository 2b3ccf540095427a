package session

import (
	"context"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

// TestChildrenGetDefaultSignals: a manager started with SIGINT, SIGQUIT and SIGHUP
// ignored (as `ptyhub serve &` from a script, or under nohup) still gives its sessions
// default dispositions, so ^C and hangup work there. Not parallel: while the signals are
// ignored, any reaper started in this process would inherit that.
func TestChildrenGetDefaultSignals(t *testing.T) {
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP)
	m, err := NewManager(Options{})
	if err != nil {
		signal.Reset(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP)
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: `grep SigIgn /proc/self/status`, YieldTimeMs: new(int64(20000))})
	signal.Reset(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP)
	if err != nil {
		t.Fatal(err)
	}
	out := r.Output
	if r.State != StateExited {
		out += scUntilExit(t, c, r)
	}
	if !strings.Contains(out, "SigIgn:\t0000000000000000") {
		t.Errorf("a session's program has signals ignored: %q", out)
	}
	r, err = c.Exec(context.Background(), ExecRequest{Argv: []string{"sleep", "100"}, YieldTimeMs: new(int64(0))})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "\u0003", YieldTimeMs: new(int64(60000))})
	if err != nil {
		t.Fatal(err)
	}
	if w.State != StateExited || w.Signal != "SIGINT" {
		t.Errorf("^C to sleep: %+v", w)
	}
}
