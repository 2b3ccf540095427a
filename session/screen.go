package session

import (
	"context"
	"strconv"
	"time"

	"github.com/ptyhub/ptyhub/screen"
	"github.com/ptyhub/ptyhub/truncate"
)

// screenState holds a session's screen model (package screen): the screen view, the
// attach repaint, and the answers to terminal queries. Every method is safe on a nil
// receiver.
//
// The model follows the session's hub; the reader only scans a small read for queries
// there (screen.Model.Kick), the rest runs off its path. Its emulator
// is created at the first demand and advanced on demand, skipping ahead when far behind
// (see screen.Model), and its answerer scans every byte for queries with a fast scanner
// and answers each once — unless a human's terminal is attached, which then answers.
type screenState struct {
	m *screen.Model
}

// startScreen starts the screen model of s; on a pseudo-terminal it also answers
// terminal queries (its answerer runs while output waits to be scanned: the reader
// kicks it, noteOutput). Answers go through the session's writer queue, so they keep their
// order with the agent's input (a program waiting for an answer reads its input, so the
// queue drains).
func startScreen(s *Session, rows, cols int) *screenState {
	var reply func([]byte)
	if s.tty {
		reply = func(b []byte) {
			if s.humanAttached() {
				return // the human's terminal answers
			}
			s.enqueue(b, false) // fails only once the session is gone: nobody to answer
		}
	}
	return &screenState{m: screen.Follow(s.hub, rows, cols, reply)}
}

// maxAnswerWait bounds how long input waits for the answers to the terminal queries
// printed before it (awaitAnswers). The answerer only scans output (and, for a cursor
// position, catches the emulator up on a few screens of it), so this is a safety net:
// input never hangs behind an answerer that cannot keep up.
const maxAnswerWait = 5 * time.Second

// awaitAnswers returns once every terminal query in the output read so far has its
// answer queued for the program (screen.Model.AnsweredCh), so that input queued after it
// goes in after those answers: a terminal answers a query as it shows it, before
// anything printed after the query is on its screen, so a key pressed in response to
// that screen always comes after the answer. Without it, an agent that saw the screen
// after a query could type before the answer was queued (a cursor position query waits
// for the emulator; any answer waits while the machine is busy), and a program that
// read the keys and left raw mode (vim's :wq) had the late answer echoed onto the screen
// as if typed. It returns at once on a pipe or when nothing is owed, and otherwise at
// the latest at deadline (the call's: a call never waits past it), after maxAnswerWait,
// or when ctx ends or the session is torn down; the input then goes in anyway.
func (s *Session) awaitAnswers(ctx context.Context, deadline time.Time) {
	if !s.tty || s.scr == nil {
		return
	}
	ch := s.scr.m.AnsweredCh(s.hub.End())
	select {
	case <-ch:
		return
	default:
	}
	d := min(time.Until(deadline), maxAnswerWait)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	case <-s.quit:
	}
}

// kick tells the model of new output p, the chunk the reader has just written to the
// hub (the reader calls it after each chunk): a small chunk's queries are answered here,
// in the reader (their answers enqueued, see startScreen), scanning p where it is, else
// the query answerer is started when it is not running.
func (sc *screenState) kick(p []byte) {
	if sc != nil {
		sc.m.KickWrote(p)
	}
}

func (sc *screenState) resize(rows, cols int) {
	if sc != nil {
		sc.m.Resize(rows, cols)
	}
}

// stop ends the answerer and keeps the final screen.
func (sc *screenState) stop() {
	if sc != nil {
		sc.m.Close()
	}
}

// inputModes returns the terminal modes that change what keys send (zero on pipes).
func (s *Session) inputModes() screen.Modes {
	if !s.tty || s.scr == nil {
		return screen.Modes{}
	}
	return s.scr.m.InputModes()
}

func (sc *screenState) snapshot() (screen.Snapshot, bool) {
	if sc == nil {
		return screen.Snapshot{}, false
	}
	return sc.m.Snapshot(), true
}

// Repaint returns bytes that, written to a fresh terminal of the session's size (in its
// main screen, default modes), redraw the session's current screen as tmux does on
// attach: reset attributes, enter the alternate screen if the program is in it, clear,
// draw every cell with its attributes, restore the input modes the program set (cursor
// keys, mouse reporting, focus events, bracketed paste), then place the cursor and show
// or hide it. All output the session printed before the call is applied. It returns nil
// for a session that never started. It may run the emulator for a few milliseconds; it
// has no other side effect and is safe for concurrent use.
func (s *Session) Repaint() []byte {
	data, _ := s.RepaintAt()
	return data
}

// RepaintAt is Repaint that also returns the output offset the repaint brings a terminal
// up to: an attach client writes data, then the session's output from next on, and
// misses nothing and shows nothing twice.
func (s *Session) RepaintAt() (data []byte, next int64) {
	if s.scr == nil {
		return nil, s.hub.End()
	}
	return s.scr.m.Repaint()
}

// readScreen is read_output with view "screen": the rows of the current screen, joined
// with "\n" (trailing blank rows left out), with the cursor and alternate-screen flag.
// Once the program has exited it first waits (at most a second: a survivor may hold the
// terminal) for the rest of the output to be read, so the screen is the final one.
func (c *Client) readScreen(s *Session, t0 time.Time, budget int, warns []string) (*Result, error) {
	s.touch()
	if s.isExited() {
		t := time.NewTimer(time.Second)
		select {
		case <-s.drained:
		case <-t.C:
		}
		t.Stop()
	}
	snap, ok := s.scr.snapshot()
	if !ok {
		warns = append(warns, "this session has no screen (it never started)")
	}
	tr := truncate.Middle(snap.Text(), budget)
	state, code, sig, core, timedOut := s.exitFields()
	r := &Result{SessionID: strconv.Itoa(s.id), UUID: s.uuid, State: state, ExitCode: code,
		Signal: sig, CoreDumped: core, TimedOut: timedOut, ReturnedBecause: BecauseRead,
		Output: tr.Text, NextOffset: s.hub.End(), ChunkID: chunkID(),
		Screen: &Screen{Rows: snap.Rows, CursorRow: snap.CursorRow, CursorCol: snap.CursorCol,
			AltScreen: snap.AltScreen}}
	if r.Screen.Rows == nil {
		r.Screen.Rows = []string{}
	}
	if tr.Truncated {
		n := tr.OriginalTokens
		r.OriginalTokenCount = &n
	}
	r.Notices = c.notices(nil, warns)
	r.WallTimeMs = float64(time.Since(t0).Microseconds()) / 1000
	return r, nil
}
