package session

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// askSession starts prog (a shell command) in a new manager and returns the client and
// the session's id once it waits for input.
func askSession(t *testing.T, prog string) (*Manager, *Client, string) {
	t.Helper()
	m, err := NewManager(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c := m.NewClient("t")
	y := int64(30000)
	r, err := c.Exec(t.Context(), ExecRequest{Cmd: prog, YieldTimeMs: &y})
	if err != nil || r.State != StateRunning {
		t.Fatalf("exec: %v %+v", err, r)
	}
	return m, c, r.SessionID
}

// ask runs AskHuman on its own goroutine and returns the channel of its answer once the
// ask has begun (the session's bell rang).
func ask(t *testing.T, c *Client, id, msg string, timeoutMs int64) <-chan *AskResult {
	t.Helper()
	s, err := c.m.lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	rang, _ := s.ask.rang()
	done := make(chan *AskResult, 1)
	// The ask: owned by this test; AskHuman returns by its timeout at the latest.
	go func() {
		r, err := c.AskHuman(context.Background(), AskRequest{SessionID: id, Message: msg, TimeoutMs: &timeoutMs})
		if err != nil {
			t.Errorf("AskHuman: %v", err)
		}
		done <- r
	}()
	<-rang
	return done
}

// A person who types a line the program reads answers the ask; the result has the
// program's output after it, never the hidden input; the mark goes with the ask. A
// terminal attached during the ask is told one is pending.
func TestAskAnswered(t *testing.T) {
	t.Parallel()
	m, c, id := askSession(t, `read -s -p "password: " pw; echo "got ${#pw}"; read -p "next? " x`)
	a, err := m.Attach(id, AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Detach()
	rang, pending := a.Asked()
	if pending {
		t.Error("an ask is pending before any was made")
	}
	done := ask(t, c, id, "type it", 60000)
	<-rang // the attached terminal rings
	late, _ := m.Attach(id, AttachOptions{ReadOnly: true})
	defer late.Detach()
	if _, pending := late.Asked(); !pending {
		t.Error("a terminal attached during the ask is not told an agent waits for a person")
	}
	l, _ := c.List(t.Context())
	if len(l.Sessions) != 1 || !l.Sessions[0].NeedsHuman || l.Sessions[0].HumanMessage != "type it" || !l.Sessions[0].PasswordPrompt {
		t.Errorf("list while asking: %+v", l.Sessions)
	}
	a.Write([]byte("hunter2-secret\r"))
	r := <-done
	if r == nil || r.Person != PersonAnswered || !strings.Contains(r.Output, "got 14") || strings.Contains(r.Output, "hunter2") {
		t.Fatalf("ask: %+v", r)
	}
	if r.HumanInputBytes != 15 {
		t.Errorf("human_input_bytes %d, want 15", r.HumanInputBytes)
	}
	l, _ = c.List(t.Context())
	for _, in := range l.Sessions {
		if in.NeedsHuman {
			t.Errorf("still marked after the ask returned: %+v", in)
		}
	}
}

// A person who takes the session and leaves releases it, typed or not.
func TestAskReleased(t *testing.T) {
	t.Parallel()
	m, c, id := askSession(t, `read -p "continue? " x`)
	done := ask(t, c, id, "", 60000)
	ro, _ := m.Attach(id, AttachOptions{ReadOnly: true}) // a watcher is not a person taking over
	defer ro.Detach()
	a, _ := m.Attach(id, AttachOptions{})
	a.Detach()
	if r := <-done; r == nil || r.Person != PersonReleased {
		t.Fatalf("ask: %+v", r)
	}
}

// Nobody comes: the ask returns at its timeout; the program ending ends it too; an
// ended session cannot be asked about.
func TestAskTimeoutAndExit(t *testing.T) {
	t.Parallel()
	_, c, id := askSession(t, `read -p "continue? " x; echo bye`)
	if r := <-ask(t, c, id, "", 1); r == nil || r.Person != PersonTimeout {
		t.Fatalf("ask: %+v", r)
	}
	done := ask(t, c, id, "", 60000)
	c.Write(t.Context(), WriteRequest{SessionID: id, Chars: "y\n", YieldTimeMs: new(int64)})
	if r := <-done; r == nil || r.Person != PersonExited || r.State != StateExited {
		t.Fatalf("ask: %+v", r)
	}
	if _, err := c.AskHuman(t.Context(), AskRequest{SessionID: id}); !errors.Is(err, ErrExited) {
		t.Errorf("asking about an ended session: %v, want ErrExited", err)
	}
}
