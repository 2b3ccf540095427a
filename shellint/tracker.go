package shellint

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxOSC bounds the body of an OSC the tracker keeps; a longer one is skipped.
const maxOSC = 64 << 10

// keepDone is how many finished commands a Tracker remembers.
const keepDone = 64

// Command is one command line run by the shell, as its marks told it. Offsets are raw
// output offsets of the session.
type Command struct {
	// Line is the command line as the shell ran it ("" when the shell did not say, as
	// bash does not for a line its history did not record).
	Line string
	// Cwd is the shell's directory after the command (before it while it runs).
	Cwd string
	// ExitCode is the status the shell reported; meaningful once Done.
	ExitCode int
	Done     bool
	// Start and End are when ptyhub read the command's start and end marks.
	Start, End time.Time
	// OutFrom is where the command's output starts (after its start mark), OutTo where
	// it ends (the start of its end mark), and DoneAt the offset after its end mark.
	OutFrom, OutTo, DoneAt int64
}

// Tracker follows a shell's marks through its output. Feed it every byte of output in
// order, before anyone else can read those bytes, and its answers about an offset are
// final once that offset has been fed. Safe for concurrent use (one mutex, held briefly;
// it calls nothing outside the package).
type Tracker struct {
	kind Kind // immutable

	mu sync.Mutex
	p  oscParser

	cwd       string
	prompt    bool  // the latest mark is a prompt's end: the shell waits at its prompt
	promptEnd int64 // the offset after the latest prompt-end mark (-1: none yet)
	running   *Command
	done      []Command // the last keepDone finished commands, oldest first
}

// NewTracker returns a tracker of a shell of kind k started in dir.
func NewTracker(k Kind, dir string) *Tracker {
	return &Tracker{kind: k, cwd: dir, promptEnd: -1}
}

// Kind returns the shell's kind.
func (t *Tracker) Kind() Kind { return t.kind }

// Feed parses p, the output at offsets [off, off+len(p)), read at now.
func (t *Tracker) Feed(p []byte, off int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.feed(p, off, func(body []byte, start, end int64) { t.mark(string(body), start, end, now) })
}

// mark applies one OSC (its body, and its raw extent [start, end)).
func (t *Tracker) mark(body string, start, end int64, now time.Time) {
	if rest, ok := strings.CutPrefix(body, "7;"); ok {
		if dir, ok := fileURLPath(rest); ok {
			t.cwd = dir
			if t.running != nil {
				t.running.Cwd = dir
			}
		}
		return
	}
	rest, ok := strings.CutPrefix(body, "133;")
	if !ok || rest == "" {
		return
	}
	kind, args, _ := strings.Cut(rest, ";")
	switch kind {
	case "A":
		t.prompt = false
	case "B":
		t.prompt = true
		t.promptEnd = end
	case "C":
		t.prompt = false
		c := &Command{Cwd: t.cwd, Start: now, OutFrom: end}
		for _, a := range strings.Split(args, ";") {
			if v, ok := strings.CutPrefix(a, "cmdline_url="); ok {
				c.Line = percentDecode(v)
			}
		}
		t.running = c
	case "D":
		t.prompt = false
		c := t.running
		if c == nil {
			return // a prompt after an empty line or ^C: no command ran
		}
		t.running = nil
		code, _, _ := strings.Cut(args, ";")
		c.ExitCode, _ = strconv.Atoi(code)
		c.Done, c.End, c.OutTo, c.DoneAt = true, now, start, end
		if len(t.done) == keepDone {
			t.done = append(t.done[:0], t.done[1:]...)
		}
		t.done = append(t.done, *c)
	}
}

// AtPrompt reports whether the shell waits at its prompt, the prompt ended at an offset
// in (from, upto]: its latest mark is a prompt's end, past from and already read by
// whoever reads up to upto.
func (t *Tracker) AtPrompt(from, upto int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.prompt && t.promptEnd > from && t.promptEnd <= upto
}

// Prompting reports whether the latest mark is a prompt's end (the shell waits for a
// command line, whatever has been read of its output).
func (t *Tracker) Prompting() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.prompt
}

// Finished returns the commands whose end mark lies in (from, upto], oldest first.
func (t *Tracker) Finished(from, upto int64) []Command {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Command
	for _, c := range t.done {
		if c.DoneAt > from && c.DoneAt <= upto {
			out = append(out, c)
		}
	}
	return out
}

// State is a shell's state for a listing.
type State struct {
	Cwd     string
	Running *Command // the command running now (nil at the prompt)
	Last    *Command // the last command that finished (nil: none yet)
}

// State returns the shell's state now.
func (t *Tracker) State() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := State{Cwd: t.cwd}
	if t.running != nil {
		c := *t.running
		st.Running = &c
	}
	if n := len(t.done); n > 0 {
		c := t.done[n-1]
		st.Last = &c
	}
	return st
}

// fileURLPath returns the path of a file://host/path URL, percent-decoded.
func fileURLPath(u string) (string, bool) {
	rest, ok := strings.CutPrefix(u, "file://")
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return "", false
	}
	return percentDecode(rest[i:]), true
}

// percentDecode decodes %XX escapes; a malformed one is kept as it is.
func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// oscParser finds OSC sequences (ESC ] body, ended by BEL or ESC \) in a byte stream,
// across chunk boundaries, with their raw extents.
type oscParser struct {
	st    int // 0 ground, 1 after ESC, 2 in OSC, 3 ESC in OSC
	start int64
	body  []byte
	over  bool // the body passed maxOSC: skipped
}

func (p *oscParser) feed(data []byte, off int64, emit func(body []byte, start, end int64)) {
	for i, b := range data {
		switch p.st {
		case 0:
			if b == 0x1b {
				p.st, p.start = 1, off+int64(i)
			}
		case 1:
			switch b {
			case ']':
				p.st, p.body, p.over = 2, p.body[:0], false
			case 0x1b:
				p.start = off + int64(i)
			default:
				p.st = 0
			}
		case 2:
			switch b {
			case 0x07:
				p.st = 0
				if !p.over {
					emit(p.body, p.start, off+int64(i)+1)
				}
			case 0x1b:
				p.st = 3
			case 0x18, 0x1a: // CAN, SUB cancel the sequence
				p.st = 0
			default:
				if len(p.body) < maxOSC {
					p.body = append(p.body, b)
				} else {
					p.over = true
				}
			}
		case 3:
			p.st = 0
			if b == '\\' {
				if !p.over {
					emit(p.body, p.start, off+int64(i)+1)
				}
			} else if b == ']' {
				p.st, p.start, p.body, p.over = 2, off+int64(i)-1, p.body[:0], false
			} else if b == 0x1b {
				p.st, p.start = 1, off+int64(i)
			}
		}
	}
}
