package session

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"
)

// Asking for a person (ask_human): an agent marks a session as needing a human, attached
// terminals ring, and the call waits until the person is done with it.

// AskRequest is the input of ask_human.
type AskRequest struct {
	SessionID string `json:"session_id" jsonschema:"session id: the short number, the UUID, or a unique UUID prefix"`
	Message   string `json:"message,omitempty" jsonschema:"what the person should do, shown to them (e.g. 'type the sudo password', 'answer the y/N question as you see fit')"`
	TimeoutMs *int64 `json:"timeout_ms,omitempty" jsonschema:"give up waiting for the person after this many ms (default 600000, max 3600000)"`
}

// Defaults of ask_human.
const (
	DefaultAskTimeoutMs = 600_000
	MaxAskTimeoutMs     = 3_600_000
)

// Why an ask returned (AskResult.Person).
const (
	PersonAnswered = "answered" // the program read the person's input and moved on
	PersonReleased = "released" // the person gave the session back
	PersonExited   = "exited"   // the program ended
	PersonTimeout  = "timeout"  // nobody came within timeout_ms
)

// AskResult is what ask_human returns: how the person's turn ended and the session's
// output since the agent's previous call, as write_stdin's poll gives it (what the person
// typed with the terminal's echo off never appears; see Result.HumanInputBytes).
type AskResult struct {
	Person string `json:"person"`
	Result
}

// Asker is a Service that can ask for a person. The in-process Client, the server's
// client and the federation implement it.
type Asker interface {
	AskHuman(ctx context.Context, req AskRequest) (*AskResult, error)
}

// askState is a session's pending ask and what the wait for the person watches. The
// zero value is ready.
type askState struct {
	// mu guards the fields below; a leaf of the lock order (doc.go).
	mu      sync.Mutex
	pending int    // asks waiting
	message string // the latest ask's message
	rung    chan struct{}
	typed   int64 // bytes humans typed, ever
	// lineEnd: the last human input ended a line (or the terminal was not in canonical
	// mode), so a program waiting again has read it.
	lineEnd     bool
	inputOffset int64 // the output's end when a human last typed
	writers     int   // attached clients that may type
	writersEver int64 // attachments that could type, ever
}

// rang returns a channel closed when the next ask begins, and whether an ask is pending
// now (both read at once: an ask is either pending or closes the channel).
func (a *askState) rang() (<-chan struct{}, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rung == nil {
		a.rung = make(chan struct{})
	}
	return a.rung, a.pending > 0
}

// noteHumanInput records input typed by an attached person; end is the output's end
// before the input was queued, so that any output after it answers the input.
func (s *Session) noteHumanInput(p []byte, end int64) {
	canon := true
	if s.tty {
		if a, err := s.master.Attrs(); err == nil {
			canon = a.Canonical
		}
	}
	a := &s.ask
	a.mu.Lock()
	a.typed += int64(len(p))
	a.lineEnd = !canon || bytes.ContainsAny(p[len(p)-1:], "\r\n")
	a.inputOffset = end
	a.mu.Unlock()
}

// noteWriter counts an attached client that may type in (+1) or out (-1).
func (s *Session) noteWriter(d int) {
	a := &s.ask
	a.mu.Lock()
	a.writers += d
	if d > 0 {
		a.writersEver++
	}
	a.mu.Unlock()
}

// asked reports whether an agent waits for a person, and its message.
func (s *Session) asked() (bool, string) {
	a := &s.ask
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pending > 0, a.message
}

// askPoll is how often an ask looks at the session while it waits for the person, a
// human's time scale.
const askPoll = 50 * time.Millisecond

// AskHuman marks the session as needing a person (Info.NeedsHuman, with the message),
// rings its attached terminals (Attachment.Asked), and waits until the person is done:
// they typed and the program read it and waits again or moved on (PersonAnswered), they
// took the session and gave it back (PersonReleased), the program exited, or the
// timeout passed. It then returns the session's new output as an empty write_stdin poll
// does. The mark is cleared when the call returns.
func (c *Client) AskHuman(ctx context.Context, req AskRequest) (*AskResult, error) {
	s, err := c.lookup(req.SessionID)
	if err != nil {
		return nil, err
	}
	timeout := int64(DefaultAskTimeoutMs)
	if req.TimeoutMs != nil {
		if *req.TimeoutMs < 0 {
			return nil, fmt.Errorf("%w: timeout_ms is negative", ErrInvalid)
		}
		timeout = min(*req.TimeoutMs, MaxAskTimeoutMs)
	}
	if s.isExited() {
		return nil, fmt.Errorf("%w: session %d has exited; a person cannot help it now", ErrExited, s.id)
	}
	a := &s.ask
	a.mu.Lock()
	a.pending++
	a.message = req.Message
	typed0, writers0 := a.typed, a.writersEver
	if a.rung != nil {
		close(a.rung) // ring the attached terminals
	}
	a.rung = nil
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.pending--
		if a.pending == 0 {
			a.message = ""
		}
		a.mu.Unlock()
	}()
	deadline := time.NewTimer(time.Duration(timeout) * time.Millisecond)
	defer deadline.Stop()
	tick := time.NewTicker(askPoll)
	defer tick.Stop()
	person := ""
	for person == "" {
		if s.isExited() {
			person = PersonExited
			break
		}
		a.mu.Lock()
		typed, lineEnd, off, writers, ever := a.typed, a.lineEnd, a.inputOffset, a.writers, a.writersEver
		a.mu.Unlock()
		switch {
		case (typed > typed0 || ever > writers0) && writers == 0:
			person = PersonReleased
		case typed > typed0 && lineEnd && s.hub.End() > off:
			// The program printed after the person's input; it answered when it waits
			// again. The detector gets how long the output has been quiet: without the
			// kernel's view of blocked threads (the portable paths), a prompt-shaped
			// terminal with its input read (the input queue drained), the foreground
			// group asleep and still, counts only once the output is quiet for long
			// enough.
			quiet := time.Duration(0)
			if last := s.lastOutputAt(); !last.IsZero() {
				quiet = time.Since(last)
			}
			if v, _ := s.lookWaiting(quiet); v == waitYes {
				person = PersonAnswered
			}
		}
		if person != "" {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			person = PersonTimeout
		case <-tick.C:
		}
	}
	zero := int64(0)
	r, err := c.Write(ctx, WriteRequest{SessionID: req.SessionID, YieldTimeMs: &zero})
	if err != nil {
		return nil, err
	}
	return &AskResult{Person: person, Result: *r}, nil
}

// Asked returns a channel closed when an agent next asks for a person at this session
// (the attached terminal should ring), and whether an agent already waits for one (a
// terminal attached during an ask rings at once, so whoever attached learns a person is
// wanted here).
func (a *Attachment) Asked() (next <-chan struct{}, pending bool) { return a.s.ask.rang() }
