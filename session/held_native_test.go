//go:build linux && !ptyhub_portable

package session

import (
	"context"
	"os"
	"testing"
	"time"
)

// Commands run one after another share the watch of held leaders: the epoll set made
// for the first is still there for the next (no epoll_create1, registration, goroutine
// and close per command), and it is closed once it has stayed empty for heldLinger.
// Not parallel: it looks at the process-wide watch, which other tests' sessions use.
func TestHeldWatchOutlivesOneSession(t *testing.T) {
	defer func(d time.Duration) { heldLinger = d }(heldLinger)
	heldLinger = time.Hour

	m, err := NewManager(Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	ctx := context.Background()
	y := int64(60_000)
	ep := func() *os.File {
		heldExits.mu.Lock()
		defer heldExits.mu.Unlock()
		return heldExits.ep
	}
	run := func() {
		t.Helper()
		r, err := c.Exec(ctx, ExecRequest{Argv: []string{"true"}, YieldTimeMs: &y})
		if err != nil || r.State != StateExited {
			t.Fatalf("exec: %v %+v", err, r)
		}
		if _, err := c.Kill(ctx, KillRequest{SessionID: r.SessionID, Remove: true}); err != nil {
			t.Fatal(err)
		}
		m.releasing.Wait()
	}
	run()
	first := ep()
	if first == nil {
		t.Fatal("no watch of held leaders after a command ended")
	}
	run()
	if ep() != first {
		t.Error("the next command made a new epoll set for its held leader; the first one's should serve it")
	}
	// Once empty for heldLinger, the set is closed.
	heldExits.mu.Lock()
	heldLinger = time.Millisecond
	heldExits.closeIfEmptyLocked()
	heldExits.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for ep() != nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if ep() != nil {
		t.Error("the empty set was not closed after heldLinger")
	}
}
