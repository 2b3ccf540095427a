package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/server"
)

const attachHelp = `Usage:
  ptyhub attach ID [--read-only] [--detach-keys ctrl-]]

Attaches your terminal to session ID, as tmux attach does: the recent screen is
repainted, then you see the live output and your keys go to the program. The session's
window follows your terminal's size (the latest attached terminal wins) unless
--read-only. Several terminals may attach at once; a --read-only one never types.

Detach with ctrl-] (the session keeps running); press it twice quickly to send a
literal ctrl-] to the program. --detach-keys takes Docker's syntax, e.g. ctrl-p,ctrl-q.
On detach, when the session ends, and when ptyhub attach is killed (SIGTERM, SIGHUP) your
terminal is restored: cooked mode, main screen, cursor visible, mouse reporting off.
`

// Timeouts of the detach-key filter: how long a lone single-key prefix waits for a second
// press (which sends it literally) before it detaches, and how long a partial multi-key
// sequence is held back before it is typed after all.
const (
	literalWait = 300 * time.Millisecond
	partialWait = time.Second
)

// modeResets turn off what a program may have left on in the user's terminal: mouse reporting, bracketed paste, application cursor and keypad, attributes, and
// show the cursor. Leaving the alternate screen is added when the output entered it.
const modeResets = "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?2004l\x1b[?1l\x1b>\x1b[0m\x1b[?25h"

// ending is how ptyhub attach ends: the line it prints and its exit status.
type ending struct {
	msg  string
	code int
}

// attachment is one ptyhub attach: the connection to the session and the user's
// terminal.
type attachment struct {
	a      *server.Attach
	id     string // the session's id, as the server names it
	stdout io.Writer
	outMu  sync.Mutex  // serialises writes to stdout
	inAlt  bool        // the output entered the alternate screen (guarded by outMu)
	end    chan ending // each goroutine's reason to end, buffered for all of them
}

func runAttach(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("attach", attachHelp)
	readOnly := fs.Bool("read-only", false, "watch without typing or resizing")
	keysSpec := fs.String("detach-keys", "ctrl-]", "`keys` that detach, in Docker's syntax (ctrl-p,ctrl-q)")
	socket := serverFlags(fs)
	pos, code, done := fs.parseArgs(args, 1, "give one session ID", stdout, stderr)
	if done {
		return code
	}
	keys, err := parseDetachKeys(*keysSpec)
	if err != nil {
		return usageError(stderr, "attach", err.Error())
	}
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		// As tmux: nothing to attach (a pipe or /dev/null would hang or type garbage).
		return fail(stderr, "attach", fmt.Errorf("standard input is not a terminal; attach needs one (to follow the output: ptyhub read -f %s; to type: ptyhub write %s TEXT)", pos[0], pos[0]))
	}
	var rows, cols int
	if w, h, err := term.GetSize(fd); err == nil {
		rows, cols = h, w
	}
	o, err := socket.options(ctx, "attach", true)
	if err != nil {
		return fail(stderr, "attach", err)
	}
	a, err := server.DialAttach(ctx, o, server.AttachOptions{Session: pos[0], ReadOnly: *readOnly, Rows: rows, Cols: cols})
	if err != nil {
		return fail(stderr, "attach", err)
	}
	t := &attachment{a: a, id: a.Welcome.SessionID, stdout: stdout, end: make(chan ending, 3)}

	// The user's terminal: raw mode, restored once on every way out.
	oldState, err := term.MakeRaw(fd)
	if err != nil {
		a.Close()
		return fail(stderr, "attach", fmt.Errorf("raw mode: %w", err))
	}
	restore := sync.OnceFunc(func() {
		term.Restore(fd, oldState)
		resets := modeResets
		if t.inAlt {
			resets = "\x1b[?1049l" + resets
		}
		io.WriteString(stdout, resets)
	})
	defer restore()

	// The output pump: owned by runAttach, ends when the connection ends (a.Close below).
	pumpDone := make(chan struct{})
	go func() {
		defer close(pumpDone)
		t.pump()
	}()

	// The keyboard: a non-blocking open of the terminal, so closing it ends the reader at
	// once, with no stray reader stealing the next keystroke.
	in := openKeyboard()
	if in != nil {
		// The keyboard reader: owned by runAttach, ends when in is closed.
		go t.readKeys(in, keys, *readOnly)
	}

	// Window size changes: the watcher is owned by runAttach and stops with stop.
	stop := make(chan struct{})
	winch := make(chan os.Signal, 1)
	if !*readOnly {
		signal.Notify(winch, syscall.SIGWINCH)
		go t.followSize(fd, winch, stop)
	}

	var e ending
	select {
	case e = <-t.end:
	case <-ctx.Done():
		e = ending{"interrupted", 0}
		if sig, ok := signalOf(ctx); ok {
			e = ending{"interrupted by " + signalName(sig.sig), sig.exitCode()}
		}
	}
	signal.Stop(winch)
	close(stop)
	if in != nil {
		in.Close()
	}
	a.Close()
	select {
	case <-pumpDone:
	case <-time.After(time.Second): // stdout blocked: restore anyway
	}
	t.outMu.Lock()
	restore()
	t.outMu.Unlock()
	fmt.Fprintf(stderr, "\r\n[ptyhub: %s]\r\n", e.msg)
	return e.code
}

// pump copies the session's output to the user's terminal until the session or the
// connection ends, and then sends the ending.
func (t *attachment) pump() {
	var filter escFilter // no clipboard writes or title reports reach the terminal
	var out []byte
	for {
		data, ended, exit, err := t.a.Recv()
		if err != nil {
			t.end <- ending{fmt.Sprintf("the connection to the ptyhub server ended: %v", err), exitError}
			return
		}
		t.outMu.Lock()
		t.inAlt = altScreen(data, t.inAlt)
		out = filter.Filter(out[:0], data)
		t.stdout.Write(out)
		t.outMu.Unlock()
		if ended {
			t.end <- ending{fmt.Sprintf("session %s %s", t.id, exit), 0}
			return
		}
	}
}

// readKeys types what is read from in into the session (unless readOnly) until the
// detach keys are pressed or in ends; it sends the ending, except when in was closed.
func (t *attachment) readKeys(in *os.File, keys []byte, readOnly bool) {
	f := detachFilter{seq: keys}
	buf := make([]byte, 4096)
	for {
		if f.holding() {
			in.SetReadDeadline(time.Now().Add(f.wait()))
		} else {
			in.SetReadDeadline(time.Time{})
		}
		n, err := in.Read(buf)
		var out []byte
		var detach bool
		if n > 0 {
			out, detach = f.feed(buf[:n])
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			out, detach = f.timeout()
			err = nil
		}
		if len(out) > 0 && !readOnly {
			t.a.Input(out)
		}
		if detach {
			t.end <- ending{fmt.Sprintf("detached from session %s", t.id), 0}
			return
		}
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				t.end <- ending{"the terminal closed", 0}
			}
			return
		}
	}
}

// followSize resizes the session's window to the terminal fd's size at each signal on
// winch, until stop is closed.
func (t *attachment) followSize(fd int, winch <-chan os.Signal, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-winch:
			if w, h, err := term.GetSize(fd); err == nil {
				t.a.Resize(h, w)
			}
		}
	}
}

// altScreen reports whether the terminal is in the alternate screen after data, given
// that it was (alt) before.
func altScreen(data []byte, alt bool) bool {
	on, off := -1, -1
	for _, s := range []string{"\x1b[?1049h", "\x1b[?1047h", "\x1b[?47h"} {
		on = max(on, bytes.LastIndex(data, []byte(s)))
	}
	for _, s := range []string{"\x1b[?1049l", "\x1b[?1047l", "\x1b[?47l"} {
		off = max(off, bytes.LastIndex(data, []byte(s)))
	}
	if on < 0 && off < 0 {
		return alt
	}
	return on > off
}

// parseDetachKeys parses Docker's key syntax: comma-separated keys, each a single
// character or ctrl-X (X a letter or one of @[\]^_).
func parseDetachKeys(spec string) ([]byte, error) {
	var out []byte
	for _, k := range strings.Split(spec, ",") {
		k = strings.TrimSpace(k)
		low := strings.ToLower(k)
		switch {
		case len(k) == 1:
			out = append(out, k[0])
		case strings.HasPrefix(low, "ctrl-") && len(k) == 6:
			c := low[5]
			switch {
			case c >= 'a' && c <= 'z':
				out = append(out, c-'a'+1)
			case c == '@':
				out = append(out, 0)
			case c >= '[' && c <= '_':
				out = append(out, c-'['+27)
			default:
				return nil, fmt.Errorf("--detach-keys: unknown key %q", k)
			}
		default:
			return nil, fmt.Errorf("--detach-keys: unknown key %q (want e.g. ctrl-p,ctrl-q or ctrl-])", k)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--detach-keys: no keys")
	}
	return out, nil
}

// detachFilter finds the detach sequence in typed input, across reads. A single-key
// sequence is a prefix: pressed twice it is typed literally; pressed once (nothing else
// within literalWait) it detaches. A multi-key sequence works as Docker's: held back
// while it matches, typed after all at the first byte that does not (or after
// partialWait), detaching when complete.
type detachFilter struct {
	seq   []byte
	m     int  // bytes of seq matched and held (multi-key)
	armed bool // the single key was pressed once
}

func (f *detachFilter) holding() bool { return f.armed || f.m > 0 }

func (f *detachFilter) wait() time.Duration {
	if f.armed {
		return literalWait
	}
	return partialWait
}

// feed filters p: out is what to type; detach says the sequence completed (the rest of p
// is dropped).
func (f *detachFilter) feed(p []byte) (out []byte, detach bool) {
	for _, b := range p {
		if len(f.seq) == 1 {
			if f.armed {
				f.armed = false
				if b == f.seq[0] {
					out = append(out, b)
					continue
				}
				return out, true
			}
			if b == f.seq[0] {
				f.armed = true
				continue
			}
			out = append(out, b)
			continue
		}
		if b == f.seq[f.m] {
			if f.m++; f.m == len(f.seq) {
				f.m = 0
				return out, true
			}
			continue
		}
		if f.m > 0 {
			out = append(out, f.seq[:f.m]...)
			f.m = 0
			if b == f.seq[0] {
				f.m = 1
				continue
			}
		}
		out = append(out, b)
	}
	return out, false
}

// timeout is called when nothing was typed for wait() while holding.
func (f *detachFilter) timeout() (out []byte, detach bool) {
	if f.armed {
		f.armed = false
		return nil, true
	}
	out = append(out, f.seq[:f.m]...)
	f.m = 0
	return out, false
}

// openKeyboard opens the user's terminal (standard input) anew, non-blocking, so that the
// keyboard reader can be stopped by closing it: the non-blocking flag set on standard
// input itself would be shared with the shell that started ptyhub. The terminal's path
// comes from proc.TerminalPath, per platform. When it cannot be told, it returns a
// blocking duplicate of standard input, whose reader ends at the next key or the end of
// input, and where a lone detach key waits for the next key instead of its timeout.
// Nil when standard input cannot be read at all.
func openKeyboard() *os.File {
	if p, err := proc.TerminalPath(0); err == nil {
		if f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0); err == nil {
			return f
		}
	}
	fd, err := syscall.Dup(0)
	if err != nil {
		return nil
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "stdin")
}
