package session

import (
	"context"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// TestStillRunsFollowsTheRunningThread: a look at a program that computes notes the
// thread it found running, and stillRuns then says it still runs (one read of its
// state); a look at a program blocked reading the terminal notes none, and stillRuns
// says no. Real programs on real ptys.
func TestStillRunsFollowsTheRunningThread(t *testing.T) {
	t.Parallel()
	testtool.KernelOnly(t, "the running thread is found through /proc")
	m, err := NewManager(Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	// look starts req and looks at it once the exec returned: after yield ms, or as soon
	// as the program waits for input.
	look := func(req ExecRequest, yield int64) (v waitVerdict, runs bool) {
		t.Helper()
		req.YieldTimeMs = new(yield)
		r, err := c.Exec(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Kill(context.Background(), KillRequest{SessionID: r.SessionID, Remove: true})
		s, err := m.lookup(r.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		s.collectMu.Lock()
		defer s.collectMu.Unlock()
		v, _ = s.lookVerdict(waitQuiet)
		return v, s.stillRuns()
	}
	if v, runs := look(ExecRequest{Cmd: "while :; do :; done"}, 100); v != waitNo || !runs {
		t.Errorf("a busy loop: verdict %v, still runs %v; want no, true", v, runs)
	}
	// cat is looked at once it blocks reading the terminal (a loaded machine can take
	// longer than any fixed wait to start it).
	if v, runs := look(ExecRequest{Argv: []string{"cat"}}, 60000); v != waitYes || runs {
		t.Errorf("cat: verdict %v, still runs %v; want yes, false", v, runs)
	}
}
