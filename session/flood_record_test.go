package session

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/broadcast"
)

// TestRecorderWaitsForTheBatchInAFlood: once a round of the recorder copied a flood's
// worth of output, the session reader's Flush (it found the terminal empty for a moment)
// does not wake it: what was written before that Flush is copied with the rest of the
// batch, in one round, once the batch's boundary is reached. The test writes the output
// into the hub itself, as the reader does (the program, cat, prints nothing), and waits
// for the boundary only (the manager's flood lag is an hour).
func TestRecorderWaitsForTheBatchInAFlood(t *testing.T) {
	t.Parallel()
	m, err := NewManager(Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	m.floodLag = time.Hour
	c := m.NewClient("t")
	ctx := context.Background()
	zero := int64(0)
	r, err := c.Exec(ctx, ExecRequest{Cmd: "exec cat", YieldTimeMs: &zero})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill(ctx, KillRequest{SessionID: r.SessionID, Remove: true})
	s, err := m.lookup(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if s.rec == nil {
		t.Fatal("the session records no transcript")
	}
	write := func(n int64) { // as the reader does: a Write, then the recorder's kick
		s.hub.Write(bytes.Repeat([]byte("a"), int(n)))
		s.rec.kick()
	}
	waitCopied := func() {
		for deadline := time.Now().Add(time.Minute); s.rec.copied.Load() < s.hub.End(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the recorder copied %d bytes of %d in a minute", s.rec.copied.Load(), s.hub.End())
			}
		}
	}
	const b = broadcast.BatchSize
	next := func(off int64) int64 { return ((off+b/2)/b + 1) * b } // NotifyBoundary's boundary
	for i := range 3 {
		write(next(s.hub.End()) - s.hub.End() + 32<<10) // a flood's round
		waitCopied()
		before, end := s.rec.rounds.Load(), s.hub.End()
		write(10 << 10)
		s.rec.markQuiet() // the reader finds the terminal empty
		s.hub.Flush()
		write(next(end) - s.hub.End() + 1) // the flood goes on past the batch's boundary
		waitCopied()
		if got := s.rec.rounds.Load() - before; got != 1 {
			t.Fatalf("flood %d: the output before and after the reader's Flush was copied in %d rounds, want 1 (a wake at the batch's boundary only)", i, got)
		}
	}
}
