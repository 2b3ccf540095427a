package session_test

import (
	"context"
	"slices"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// TestWatchDelta: a watcher that saw a generation is told only what changed since (a
// started session, an ended one, a removed one), not the whole table; one from before
// the manager's log (or new) gets every session.
func TestWatchDelta(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	ctx := context.Background()
	var idle []string
	for range 5 {
		idle = append(idle, mustExec(t, c, session.ExecRequest{Argv: []string{"sleep", "3600"}}).SessionID)
	}
	all, err := c.Watch(ctx, session.WatchRequest{Since: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	if all.Delta || len(all.Sessions) != 5 {
		t.Fatalf("first watch: delta %v, %d sessions, want the whole list of 5", all.Delta, len(all.Sessions))
	}
	gen := all.Generation

	done := mustExec(t, c, session.ExecRequest{Argv: []string{"true"}, YieldTimeMs: new(int64(10_000))})
	if done.State != session.StateExited {
		t.Fatalf("true: %+v", done)
	}
	if _, err := c.Kill(ctx, session.KillRequest{SessionID: idle[0], Remove: true}); err != nil {
		t.Fatal(err)
	}
	d, err := c.Watch(ctx, session.WatchRequest{Since: gen})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Delta {
		t.Fatalf("watch since %d: not a delta: %+v", gen, d)
	}
	if len(d.Sessions) != 1 || d.Sessions[0].SessionID != done.SessionID || d.Sessions[0].State != session.StateExited {
		t.Errorf("changed = %+v, want only session %s, exited", d.Sessions, done.SessionID)
	}
	if !slices.Equal(d.Removed, []string{idle[0]}) {
		t.Errorf("removed = %v, want [%s]", d.Removed, idle[0])
	}
	if d.Generation <= gen {
		t.Errorf("generation %d, want past %d", d.Generation, gen)
	}
}

// A Watch with no session to watch for input (between the changes of an agent's
// sessions: what ptyhub mcp's resources watch asks on each of them) waits for the
// generation alone: it makes no context, watcher set or channel of its own, and a
// cancelled one still returns the context's error. Not parallel: it counts the
// process's allocations.
func TestWatchGenerationOnlyAllocatesNothing(t *testing.T) {
	c := wClient(t)
	first, err := c.Watch(context.Background(), session.WatchRequest{Since: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := session.WatchRequest{Since: first.Generation}
	if _, err := c.Watch(ctx, req); err != context.Canceled {
		t.Fatalf("a cancelled watch returned %v, want context.Canceled", err)
	}
	if n := testing.AllocsPerRun(20, func() { c.Watch(ctx, req) }); n != 0 {
		t.Errorf("a cancelled watch of the generation alone allocated %.0f times, want 0", n)
	}
}
