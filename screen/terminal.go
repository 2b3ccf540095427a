// Package screen is ptyhub's screen model: a terminal emulator
// (github.com/charmbracelet/x/vt) made safe for concurrent use, a streaming recogniser of
// terminal queries, and Model, which follows a session's output hub and renders its
// screen on demand without ever sitting on the session's reader path.
package screen

import (
	"io"
	"strconv"
	"strings"
	"sync"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"github.com/ptyhub/ptyhub/termtext"
)

// Snapshot is a rendered screen.
type Snapshot struct {
	Rows         []string // one per row, trailing blanks trimmed
	CursorRow    int      // 0-based
	CursorCol    int      // 0-based
	AltScreen    bool
	CursorHidden bool
}

// Text returns the rows joined with "\n", with trailing empty rows left out.
func (s Snapshot) Text() string {
	n := len(s.Rows)
	for n > 0 && s.Rows[n-1] == "" {
		n--
	}
	return strings.Join(s.Rows[:n], "\n")
}

// inputModes are the modes that change what a terminal sends; Repaint restores them.
var inputModes = []ansi.Mode{
	ansi.ModeCursorKeys, ansi.ModeMouseNormal, ansi.ModeMouseButtonEvent,
	ansi.ModeMouseAnyEvent, ansi.ModeMouseExtSgr, ansi.ModeFocusEvent, ansi.ModeBracketedPaste,
}

// Terminal is a terminal emulator safe for concurrent use. Its reply pump (one goroutine,
// owned by the Terminal, stopped by Close) always drains what the emulator answers to
// queries, because the emulator's Write blocks on the first query until its answer is
// read (charmbracelet/x#939). Scrollback is limited to one line: the model only renders
// the screen, and vt's scrollback costs both time and memory.
type Terminal struct {
	mu       sync.Mutex
	emu      *vt.Emulator
	hidden   bool
	modes    map[ansi.Mode]bool
	closed   bool
	pumpDone chan struct{}
}

// NewTerminal returns a blank rows×cols terminal and starts its reply pump. reply, when
// not nil, is called from the pump with each answer the emulator produced (its DA, CPR,
// colour and mode reports); it must not block. Call Close to stop the pump.
func NewTerminal(rows, cols int, reply func([]byte)) *Terminal {
	t := &Terminal{emu: vt.NewEmulator(max(cols, 1), max(rows, 1)), modes: map[ansi.Mode]bool{},
		pumpDone: make(chan struct{})}
	t.emu.SetScrollbackSize(1)
	t.emu.SetCallbacks(vt.Callbacks{
		CursorVisibility: func(visible bool) { t.hidden = !visible },
		EnableMode:       func(m ansi.Mode) { t.modes[m] = true },
		DisableMode:      func(m ansi.Mode) { delete(t.modes, m) },
	})
	go t.pump(reply)
	return t
}

// pump drains the emulator's answers until Close closes its pipe.
func (t *Terminal) pump(reply func([]byte)) {
	defer close(t.pumpDone)
	buf := make([]byte, 256)
	for {
		n, err := t.emu.Read(buf)
		if n > 0 && reply != nil {
			reply(append([]byte(nil), buf[:n]...))
		}
		if err != nil {
			return
		}
	}
}

// Write feeds program output to the emulator. It never fails; after Close it does
// nothing.
func (t *Terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.emu.Write(p)
	}
	return len(p), nil
}

// Resize changes the size; content is kept as far as it fits.
func (t *Terminal) Resize(rows, cols int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.emu.Resize(max(cols, 1), max(rows, 1))
}

// Cursor returns the cursor position, 0-based.
func (t *Terminal) Cursor() (row, col int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.emu.CursorPosition()
	return p.Y, p.X
}

// SetModes switches the alternate screen, cursor keys and cursor visibility to m, as the program's
// own sequences would (entering the alternate screen clears it).
func (t *Terminal) SetModes(m Modes) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if m.AltScreen != t.emu.IsAltScreen() {
		t.emu.WriteString(map[bool]string{true: "\x1b[?1049h", false: "\x1b[?1049l"}[m.AltScreen])
	}
	if m.CursorKeys != t.modes[ansi.ModeCursorKeys] {
		t.emu.WriteString(map[bool]string{true: "\x1b[?1h", false: "\x1b[?1l"}[m.CursorKeys])
	}
	if m.CursorHidden != t.hidden {
		t.emu.WriteString(map[bool]string{true: "\x1b[?25l", false: "\x1b[?25h"}[m.CursorHidden])
	}
}

// Snapshot renders the screen as text. Concealed cells (SGR 8), which a terminal shows
// blank, are not shown: a run of them that holds text becomes termtext.HiddenText once,
// and concealed blanks stay blanks.
func (t *Terminal) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, w := t.emu.Height(), t.emu.Width()
	s := Snapshot{Rows: make([]string, h), AltScreen: t.emu.IsAltScreen(), CursorHidden: t.hidden}
	p := t.emu.CursorPosition()
	s.CursorRow, s.CursorCol = p.Y, p.X
	var b strings.Builder
	for y := range h {
		b.Reset()
		hid := false // the marker of the current concealed run was written
		for x := 0; x < w; x++ {
			c := t.emu.CellAt(x, y)
			if c == nil || c.IsZero() { // the second column of a wide character
				continue
			}
			if c.Style.Attrs&uv.AttrConceal == 0 {
				hid = false
				b.WriteString(c.Content)
				continue
			}
			switch {
			case hid:
			case strings.TrimSpace(c.Content) == "":
				b.WriteByte(' ')
			default:
				hid = true
				b.WriteString(termtext.HiddenText)
			}
		}
		s.Rows[y] = strings.TrimRight(b.String(), " ")
	}
	return s
}

// Repaint returns bytes that, written to a terminal of the same size in its main screen
// with default modes, redraw this screen exactly as tmux does on attach: reset the pen,
// enter the alternate screen if the program is in it, clear, draw every row's cells with
// their attributes (colours, bold, …, hyperlinks), restore the input modes the program
// set (cursor keys, mouse reporting, focus events, bracketed paste), then put the cursor
// where it is and show or hide it. Trailing blank cells without attributes are not
// written (the clear already made them blank).
func (t *Terminal) Repaint() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, w := t.emu.Height(), t.emu.Width()
	var b strings.Builder
	b.WriteString("\x1b[0m")
	if t.emu.IsAltScreen() {
		b.WriteString("\x1b[?1049h")
	}
	b.WriteString("\x1b[H\x1b[2J")
	line := make(uv.Line, w)
	for y := range h {
		empty := true
		for x := range w {
			if c := t.emu.CellAt(x, y); c != nil {
				line[x] = *c
			} else {
				line[x] = uv.EmptyCell
			}
			empty = empty && line[x].Equal(&uv.EmptyCell)
		}
		if empty {
			continue
		}
		b.WriteString("\x1b[" + strconv.Itoa(y+1) + ";1H")
		b.WriteString(line.Render())
	}
	for _, m := range inputModes {
		if t.modes[m] {
			b.WriteString(ansi.SetMode(m))
		}
	}
	p := t.emu.CursorPosition()
	b.WriteString("\x1b[" + strconv.Itoa(p.Y+1) + ";" + strconv.Itoa(p.X+1) + "H")
	if t.hidden {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	return []byte(b.String())
}

// Close stops the reply pump and waits for it to end. Snapshot and Repaint keep working;
// Write does nothing from then on. Calling it again does nothing.
func (t *Terminal) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	// Close the pipe's writer rather than the emulator: vt's Close sets a flag its Read
	// checks without a lock, which the pump would race with.
	if pw, ok := t.emu.InputPipe().(*io.PipeWriter); ok {
		pw.CloseWithError(io.EOF)
	}
	t.mu.Unlock()
	<-t.pumpDone
}
