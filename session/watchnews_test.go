package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWatchKnownWaitingIsNoNews: a watcher that already heard a session waits for input
// (a subscriber of its resource) is not told again while it just goes on waiting, even
// with output the agent has not read; it is told once the program answered typed input
// and waits again. The looks are counted by a hook, so the test does not depend on time:
// the watch must see the program waiting several times without returning.
func TestWatchKnownWaitingIsNoNews(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	_, c := scNewClient(t)
	ctx := context.Background()
	// The questions come once the test opens the fifo, after exec returned: the agent
	// has not read them.
	gate := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := c.Exec(ctx, ExecRequest{Argv: []string{"bash", "-c", "cat '" + gate + "' >/dev/null; read -p 'Deploy? ' a; read -p 'Sure? ' b; echo done"}, YieldTimeMs: new(int64(0))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Kill(context.Background(), KillRequest{SessionID: r.SessionID}) })
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The first watch of the session tells that it waits (and reads nothing).
	first, err := c.Watch(ctx, WatchRequest{Since: ^uint64(0), SessionIDs: []string{r.SessionID}})
	if err != nil {
		t.Fatal(err)
	}
	for len(first.Events) == 0 {
		if first, err = c.Watch(ctx, WatchRequest{Since: first.Generation, SessionIDs: []string{r.SessionID}}); err != nil {
			t.Fatal(err)
		}
	}
	heard := first.Events[0]
	if heard.SessionID != r.SessionID || heard.Output == 0 {
		t.Fatalf("event %+v: want session %s with its output mark", heard, r.SessionID)
	}
	s, err := c.lookup(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	s.collectMu.Lock()
	unread := s.cursor < s.hub.End()
	s.collectMu.Unlock()
	if !unread {
		t.Fatal("the prompt was read by the agent; the test needs it unread")
	}

	// Heard waiting: several looks see it waiting, and the watch does not return.
	wctx, cancel := context.WithCancel(ctx)
	yes := 0
	got := s.watch(wctx, waitEvents{waiting: true, heard: &watchMark{heard.Output, heard.Input}, looked: func(v waitVerdict) {
		if v == waitYes {
			if yes++; yes == 5 {
				cancel()
			}
		}
	}}, nil)
	cancel()
	if got != "" {
		t.Fatalf("a session heard waiting, still waiting, fired %q after %d looks saw it waiting", got, yes)
	}

	// Typed input answered (before the next watch began), the next question is news.
	if _, err := c.Write(ctx, WriteRequest{SessionID: r.SessionID, Chars: "y\r", YieldTimeMs: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	again, err := c.Watch(ctx, WatchRequest{Since: first.Generation, SessionIDs: []string{r.SessionID}, Heard: []WatchEvent{heard}})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Events) != 1 || again.Events[0].Input == heard.Input {
		t.Fatalf("after an answer and a new question: %+v, want an event with a new mark (heard %+v)", again, heard)
	}
}
