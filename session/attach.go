package session

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
)

// attachState tracks the human clients attached to a session: how many there are (an
// attached terminal answers terminal queries itself), which one set the window size last
// (the size follows the latest attached terminal, as tmux's window-size latest), and how
// many bytes humans typed since the agent's last call. The zero value is ready.
type attachState struct {
	mu      sync.Mutex    // lock order (doc.go): after Session.mu, before Attachment.mu
	clients []*Attachment // terminals (not watchers), in attach order
	seq     uint64        // orders size requests
	input   atomic.Int64
}

func (a *attachState) attached() bool        { return a.count() > 0 }
func (a *attachState) takeInputBytes() int64 { return a.input.Swap(0) }

// count is the number of attached terminals.
func (a *attachState) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.clients)
}

// AttachOptions say what an attached client may do.
type AttachOptions struct {
	// ReadOnly clients see the output but never type and never resize.
	ReadOnly bool
	// Watch marks a reader that is not a terminal (ptyhub read -f): it is not counted as
	// attached, so ptyhub keeps answering terminal queries, and it cannot type or resize.
	Watch bool
	// Pool, when set, is the shared pool (Manager.NewPoolClient's pool) of the one
	// attaching. Its typing into a session of that same pool is the owner's own input
	// and is not reported as a human's (human_input_bytes) in the pool's results.
	Pool string
}

// Attachment is one human client attached to a session: it reads the output from its own
// offset (never slowing the program: the hub does not wait for it), types, and resizes.
// Methods are safe for concurrent use; Detach ends it.
type Attachment struct {
	s    *Session
	opts AttachOptions

	mu         sync.Mutex // lock order (doc.go): after attachState.mu; one Attachment at a time
	rows, cols int        // the size this client last asked for (0: none)
	seq        uint64     // when it asked
	detached   bool
}

// Attach attaches a client to session id (short id, UUID or unique prefix). Unless
// opts.Watch is set, the session then counts the client as an attached terminal until
// Detach.
func (m *Manager) Attach(id string, opts AttachOptions) (*Attachment, error) {
	s, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	s.touch()
	a := &Attachment{s: s, opts: opts}
	if !opts.Watch {
		s.att.mu.Lock()
		s.att.clients = append(s.att.clients, a)
		s.att.mu.Unlock()
	}
	if !a.ReadOnly() {
		s.noteWriter(1)
	}
	return a, nil
}

// SessionID returns the session's short id.
func (a *Attachment) SessionID() string { return strconv.Itoa(a.s.id) }

// Command returns the session's command line.
func (a *Attachment) Command() string { return a.s.command }

// ReadOnly reports whether the client may not type.
func (a *Attachment) ReadOnly() bool { return a.opts.ReadOnly || a.opts.Watch }

// End returns the offset one past the last byte of output so far.
func (a *Attachment) End() int64 { return a.s.hub.End() }

// Read copies output at offset off into p, waiting until there is some, the output
// ended (io.EOF: the program exited and its output is drained), or ctx is done. missed
// counts bytes before the returned data that have left memory (the client fell behind:
// it should repaint). It never blocks the session.
func (a *Attachment) Read(ctx context.Context, p []byte, off int64) (n int, missed int64, err error) {
	for {
		ch := a.s.hub.Notify()
		n, missed, err = a.s.hub.ReadAt(p, off)
		if n > 0 || missed > 0 || err != nil {
			return n, missed, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
}

// Repaint returns bytes that redraw the session's current screen on a terminal, and the
// output offset they bring the client up to (Session.RepaintAt, from the screen model).
// Without a screen model it replays the tail of the ring instead: from the last
// full-screen clear (or the alternate-screen switch before it) when one is in the last
// 256 KiB, else the last screenful of lines, after a clear of the client's screen.
func (a *Attachment) Repaint() (data []byte, next int64) {
	if data, next := a.s.RepaintAt(); data != nil {
		return data, next
	}
	a.s.mu.Lock()
	rows := a.s.rows
	a.s.mu.Unlock()
	tail, from := a.s.hub.Tail(256 << 10)
	return repaintTail(tail, from == 0, rows), from + int64(len(tail))
}

// repaintTail picks the part of tail that redraws the screen (see Attachment.Repaint).
// whole says tail is the whole output, so its start is a safe place to begin.
func repaintTail(tail []byte, whole bool, rows int) []byte {
	const clear = "\x1b[0m\x1b[H\x1b[2J"
	cut := -1
	for _, m := range []string{"\x1b[2J", "\x1bc", "\x1b[?1049h", "\x1b[?1047h", "\x1b[?47h"} {
		cut = max(cut, bytes.LastIndex(tail, []byte(m)))
	}
	if cut >= 0 {
		// In the alternate screen: begin at the switch so the client enters it too.
		alt := bytes.LastIndex(tail, []byte("\x1b[?1049h"))
		if alt >= 0 && alt < cut && alt > bytes.LastIndex(tail, []byte("\x1b[?1049l")) {
			cut = alt
		}
		return append([]byte(clear), tail[cut:]...)
	}
	// The last rows lines, beginning after a newline (never inside a sequence or a
	// character) unless the tail is the whole output.
	start, lines := -1, 0
	for i := len(tail) - 2; i >= 0; i-- {
		if tail[i] == '\n' {
			if lines++; lines >= rows {
				start = i + 1
				break
			}
		}
	}
	if start < 0 {
		start = 0
		if !whole {
			start = bytes.IndexByte(tail, '\n') + 1 // 0 when there is none: show it all
		}
	}
	return append([]byte(clear), tail[start:]...)
}

// Write types p into the session as a human (counted in the agent's next result as
// human_input_bytes). It returns once p is queued for the session's writer, without
// waiting for the program to read it.
func (a *Attachment) Write(p []byte) error {
	if a.ReadOnly() {
		return fmt.Errorf("%w: this client is attached read-only", ErrInvalid)
	}
	if len(p) == 0 {
		return nil
	}
	if a.isDetached() {
		return fmt.Errorf("%w: detached", ErrInvalid)
	}
	a.s.touch()
	// The output's end before the input is queued: the program's answer to it, which may
	// be printed before enqueue returns, lies after this offset (ask.go).
	end := a.s.hub.End()
	if _, err := a.s.enqueue(append([]byte(nil), p...), false); err != nil {
		return err
	}
	if a.opts.Pool == "" || sharedPool(a.opts.Pool) != a.s.pool {
		a.s.att.input.Add(int64(len(p)))
	}
	a.s.noteHumanInput(p, end)
	return nil
}

// Resize sets the session's window size to this client's terminal size (clamped to
// 1..1000), as the latest attached terminal wins. Read-only clients never resize (it is
// not an error: their size is ignored).
func (a *Attachment) Resize(rows, cols int) error {
	if a.ReadOnly() || a.isDetached() || !a.s.tty {
		return nil
	}
	rows, cols = min(max(rows, 1), MaxRows), min(max(cols, 1), MaxCols)
	a.s.att.mu.Lock()
	a.s.att.seq++
	a.mu.Lock()
	a.rows, a.cols, a.seq = rows, cols, a.s.att.seq
	a.mu.Unlock()
	a.s.att.mu.Unlock()
	return a.s.setSize(rows, cols)
}

// Detach ends the attachment. When writable terminals remain attached, the window size
// goes back to the one of the latest of them that set one. Calling it again does nothing.
func (a *Attachment) Detach() {
	a.mu.Lock()
	if a.detached {
		a.mu.Unlock()
		return
	}
	a.detached = true
	a.mu.Unlock()
	if !a.ReadOnly() {
		a.s.noteWriter(-1)
	}
	if a.opts.Watch {
		return
	}
	st := &a.s.att
	st.mu.Lock()
	var latest *Attachment
	var latestSeq uint64
	for i := 0; i < len(st.clients); i++ {
		c := st.clients[i]
		if c == a {
			st.clients = append(st.clients[:i], st.clients[i+1:]...)
			i--
			continue
		}
		c.mu.Lock()
		if c.rows > 0 && c.seq > latestSeq {
			latest, latestSeq = c, c.seq
		}
		c.mu.Unlock()
	}
	st.mu.Unlock()
	a.mu.Lock()
	mine := a.rows > 0
	a.mu.Unlock()
	if latest != nil && mine {
		latest.mu.Lock()
		r, c := latest.rows, latest.cols
		latest.mu.Unlock()
		a.s.setSize(r, c)
	}
}

func (a *Attachment) isDetached() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.detached
}

// ExitText says how the session ended ("" while it runs), e.g. "exited with code 0".
func (a *Attachment) ExitText() string {
	if !a.s.isExited() {
		return ""
	}
	return a.s.exitText()
}

// setSize resizes a running tty session's window (the program gets SIGWINCH when the size
// changed). Errors of an exited session are ignored.
func (s *Session) setSize(rows, cols int) error {
	if !s.tty || s.isExited() {
		return nil
	}
	s.mu.Lock()
	same := s.rows == rows && s.cols == cols
	s.mu.Unlock()
	if same {
		return nil
	}
	if err := s.master.SetSize(rows, cols); err != nil {
		return fmt.Errorf("session: resize: %w", err)
	}
	s.mu.Lock()
	s.rows, s.cols = rows, cols
	s.mu.Unlock()
	s.noteResize(rows, cols)
	return nil
}

// WaitExit waits until the session's exit status is known (or ctx is done) and returns
// how it ended, e.g. "exited with code 0" ("" if ctx ended first).
func (a *Attachment) WaitExit(ctx context.Context) string {
	select {
	case <-a.s.exited:
		return a.s.exitText()
	case <-ctx.Done():
		return ""
	}
}
