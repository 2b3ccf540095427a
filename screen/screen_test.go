package screen

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/ptyhub/ptyhub/broadcast"
)

// TestTerminalRows is the x/vt test shape: raw bytes in, screen rows and cursor out.
func TestTerminalRows(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		in       string
		rows     []string // the first rows; the rest must be blank
		row, col int
		alt      bool
		hidden   bool
	}{
		{"plain", "hello", []string{"hello"}, 0, 5, false, false},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}, 2, 0, false, false},
		{"lf only moves down", "a\nb", []string{"a", " b"}, 1, 2, false, false},
		{"cr overwrite", "10%\r20%\r100%", []string{"100%"}, 0, 4, false, false},
		{"backspace", "abc\bX", []string{"abX"}, 0, 3, false, false},
		{"colours dropped", "\x1b[31mred\x1b[0m ok", []string{"red ok"}, 0, 6, false, false},
		{"cursor addressing", "\x1b[3;5Hx\x1b[1;1Hy", []string{"y", "", "    x"}, 0, 1, false, false},
		{"clear screen", "junk\r\nmore\x1b[H\x1b[2Jnew", []string{"new"}, 0, 3, false, false},
		{"erase line", "abcdef\r\x1b[Kxy", []string{"xy"}, 0, 2, false, false},
		{"autowrap", strings.Repeat("a", 12) + "b", []string{"aaaaaaaaaa", "aab"}, 1, 3, false, false},
		{"scroll", "1\r\n2\r\n3\r\n4\r\n5\r\n6", []string{"2", "3", "4", "5", "6"}, 4, 1, false, false},
		{"wide chars", "日本x", []string{"日本x"}, 0, 5, false, false},
		{"alt screen", "main\x1b[?1049halt", []string{"alt"}, 0, 3, true, false},
		{"alt screen left", "main\x1b[?1049halt\x1b[?1049l", []string{"main"}, 0, 4, false, false},
		{"hidden cursor", "\x1b[?25lx", []string{"x"}, 0, 1, false, true},
		{"utf8", "é€", []string{"é€"}, 0, 2, false, false},
		{"concealed", "a \x1b[8mXY Z\x1b[0m b", []string{"a [hidden text] b"}, 0, 8, false, false},
		{"concealed blanks", "\x1b[8m  \x1b[0mz", []string{"  z"}, 0, 3, false, false},
		{"cleared while concealed", "\x1b[8m\x1b[2J\x1b[28mz", []string{"z"}, 0, 1, false, false},
		{"concealed on two rows", "\x1b[8mab\r\ncd\x1b[0mx", []string{"[hidden text]", "[hidden text]x"}, 1, 3, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			term := NewTerminal(5, 10, nil)
			defer term.Close()
			term.Write([]byte(tc.in))
			s := term.Snapshot()
			want := make([]string, 5)
			copy(want, tc.rows)
			if !slices.Equal(s.Rows, want) {
				t.Errorf("rows %q, want %q", s.Rows, want)
			}
			if s.CursorRow != tc.row || s.CursorCol != tc.col {
				t.Errorf("cursor %d,%d, want %d,%d", s.CursorRow, s.CursorCol, tc.row, tc.col)
			}
			if s.AltScreen != tc.alt || s.CursorHidden != tc.hidden {
				t.Errorf("alt %v hidden %v, want %v %v", s.AltScreen, s.CursorHidden, tc.alt, tc.hidden)
			}
		})
	}
}

// TestTerminalQueryDoesNotBlock guards the first vt trap: its Write blocks on a query
// unless the reply pump drains the answer.
func TestTerminalQueryDoesNotBlock(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []byte
	term := NewTerminal(24, 80, func(b []byte) { mu.Lock(); got = append(got, b...); mu.Unlock() })
	term.Write([]byte("ab\x1b[6n\x1b[c\x1b[5n"))
	term.Write([]byte("cd"))
	term.Close()
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Contains(got, []byte("\x1b[1;3R")) {
		t.Errorf("replies %q lack the CPR", got)
	}
	if s := term.Snapshot(); s.Rows[0] != "abcd" {
		t.Errorf("row %q", s.Rows[0])
	}
}

// TestRepaintRoundTrip: a repaint written to a fresh terminal of the same size gives the
// same cells, cursor and modes.
func TestRepaintRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []string{
		"plain text\r\nsecond line",
		"\x1b[1;31mbold red\x1b[0m \x1b[44mblue bg  \x1b[0m\x1b[7mrev\x1b[0m",
		"\x1b[?1049h\x1b[H\x1b[2J~\r\n~\r\n\x1b[5;1H\x1b[1m-- INSERT --\x1b[0m\x1b[2;3H",
		"\x1b[?25l\x1b[?2004h\x1b[?1hhidden cursor",
		"日本語 wide\r\n\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
		strings.Repeat("0123456789", 20),
	}
	for i, in := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			a := NewTerminal(6, 40, nil)
			defer a.Close()
			a.Write([]byte(in))
			paint := a.Repaint()
			b := NewTerminal(6, 40, nil)
			defer b.Close()
			b.Write([]byte("stale content that must go\r\n"))
			b.Write(paint)
			sa, sb := a.Snapshot(), b.Snapshot()
			if !slices.Equal(sa.Rows, sb.Rows) || sa.CursorRow != sb.CursorRow || sa.CursorCol != sb.CursorCol ||
				sa.AltScreen != sb.AltScreen || sa.CursorHidden != sb.CursorHidden {
				t.Fatalf("repaint differs:\n%+v\n%+v\npaint %q", sa, sb, paint)
			}
			for y := range 6 {
				for x := range 40 {
					ca, cb := a.emu.CellAt(x, y), b.emu.CellAt(x, y)
					if !ca.Equal(cb) {
						t.Fatalf("cell %d,%d: %+v vs %+v", x, y, ca, cb)
					}
				}
			}
			if !bytes.Equal(a.Repaint(), b.Repaint()) {
				t.Errorf("second-generation repaint differs")
			}
		})
	}
}

// TestScanner: queries, clears and modes recognised, at every split of the input.
func TestScanner(t *testing.T) {
	t.Parallel()
	type ev struct {
		q   Query
		off int64
	}
	cases := []struct {
		name  string
		in    string
		want  []ev // queries
		clear []int64
		modes Modes
	}{
		{"cpr", "ab\x1b[6n", []ev{{QueryCPR, 6}}, nil, Modes{}},
		{"status", "\x1b[5n", []ev{{QueryStatus, 4}}, nil, Modes{}},
		{"da1", "\x1b[c\x1b[0c", []ev{{QueryDA1, 3}, {QueryDA1, 7}}, nil, Modes{}},
		{"da2", "\x1b[>c\x1b[>0c", []ev{{QueryDA2, 4}, {QueryDA2, 9}}, nil, Modes{}},
		{"osc bel", "\x1b]11;?\x07", []ev{{QueryBg, 7}}, nil, Modes{}},
		{"osc st", "\x1b]10;?\x1b\\", []ev{{QueryFg, 8}}, nil, Modes{}},
		{"da3 xtversion", "\x1b[=c\x1b[>q\x1b[>0q", []ev{{QueryDA3, 4}, {QueryVersion, 8}, {QueryVersion, 13}}, nil, Modes{}},
		{"decrqm", "\x1b[?12$p\x1b[4$p", []ev{{QueryMode, 7}, {QueryMode, 12}}, nil, Modes{}},
		{"decrqss xtgettcap", "\x1bP$qm\x1b\\\x1bP+q544e\x1b\\", []ev{{QuerySetting, 7}, {QueryTermcap, 17}}, nil, Modes{}},
		{"osc 12 and 4", "\x1b]12;?\x07\x1b]4;1;?\x1b\\", []ev{{QueryCursorColour, 7}, {QueryPalette, 16}}, nil, Modes{}},
		{"window and decxcpr", "\x1b[18t\x1b[14t\x1b[?6n", []ev{{QueryWindow, 5}, {QueryWindow, 10}, {QueryExtCPR, 15}}, nil, Modes{}},
		{"not queries", "\x1b[6;1H\x1b[?7n\x1b[$p\x1b[?x$p\x1b[8;1;1t\x1bP1$r0m\x1b\\\x1b[2c\x1b]11;rgb:0/0/0\x07\x1b]2;title\x07", nil, nil, Modes{}},
		{"esc aborts a dcs", "\x1bPdata\x1b[6n", []ev{{QueryCPR, 10}}, nil, Modes{}},
		{"after dcs", "\x1bPq#0\x1b\\\x1b[6n", []ev{{QueryCPR, 11}}, nil, Modes{}},
		{"cancelled", "\x1b[6\x18n\x1b[5n", []ev{{QueryStatus, 9}}, nil, Modes{}},
		{"esc restarts", "\x1b[\x1b[6n", []ev{{QueryCPR, 6}}, nil, Modes{}},
		{"charset then c", "\x1b(c\x1b[5n", []ev{{QueryStatus, 7}}, nil, Modes{}},
		{"long osc skipped", "\x1b]52;c;" + strings.Repeat("A", 200) + "\x07\x1b[6n", []ev{{QueryCPR, 212}}, nil, Modes{}},
		{"clear", "ab\x1b[2J", nil, []int64{2}, Modes{}},
		{"alt", "x\x1b[?1049h", nil, []int64{1}, Modes{AltScreen: true}},
		{"alt twice clears once", "\x1b[?1049h\x1b[?1049h", nil, []int64{0}, Modes{AltScreen: true}},
		{"alt left, cursor hidden", "\x1b[?1049h\x1b[?1049l\x1b[?25l", nil, []int64{0}, Modes{CursorHidden: true}},
		{"ris", "\x1b[?25l\x1bc", nil, []int64{6}, Modes{}},
		{"cursor keys and keypad", "\x1b[?1h\x1b=", nil, nil, Modes{CursorKeys: true, KeypadApp: true}},
		{"cursor keys reset, keypad normal", "\x1b[?1;25h\x1b=\x1b[?1l\x1b>", nil, nil, Modes{}},
		{"ris resets cursor keys", "\x1b[?1h\x1b=\x1bc", nil, []int64{7}, Modes{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for split := 0; split <= len(tc.in); split++ {
				for split2 := split; split2 <= len(tc.in); split2 += max(1, len(tc.in)/7) {
					var sc Scanner
					var got []ev
					var clears []int64
					fn := func(e Event) {
						switch e.Kind {
						case EventQuery:
							got = append(got, ev{e.Query, e.Off})
						case EventClear:
							clears = append(clears, e.Off)
						}
					}
					in := []byte(tc.in)
					sc.Scan(in[:split], 0, fn)
					sc.Scan(in[split:split2], int64(split), fn)
					sc.Scan(in[split2:], int64(split2), fn)
					if !slices.Equal(got, tc.want) || !slices.Equal(clears, tc.clear) || sc.Modes() != tc.modes {
						t.Fatalf("split %d/%d: queries %v clears %v modes %+v; want %v %v %+v",
							split, split2, got, clears, sc.Modes(), tc.want, tc.clear, tc.modes)
					}
				}
			}
		})
	}
}

func TestAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		e    Event
		want string
	}{
		{Event{Query: QueryCPR}, "\x1b[3;7R"},
		{Event{Query: QueryStatus}, "\x1b[0n"},
		{Event{Query: QueryDA1}, "\x1b[?1;2c"},
		{Event{Query: QueryDA2}, "\x1b[>1;10;0c"},
		{Event{Query: QueryFg}, "\x1b]10;rgb:ffff/ffff/ffff\x07"},
		{Event{Query: QueryBg, ST: true}, "\x1b]11;rgb:0000/0000/0000\x1b\\"},
		{Event{Query: QueryCursorColour}, "\x1b]12;rgb:ffff/ffff/ffff\x07"},
		{Event{Query: QueryDA3}, "\x1bP!|00000000\x1b\\"},
		{Event{Query: QueryVersion}, "\x1bP>|ptyhub\x1b\\"},
		{Event{Query: QueryExtCPR}, "\x1b[?3;7;1R"},
		{Event{Query: QueryMode, Arg: "?12"}, "\x1b[?12;0$y"},
		{Event{Query: QueryMode, Arg: "?25", ModeState: 2}, "\x1b[?25;2$y"},
		{Event{Query: QueryMode, Arg: "4"}, "\x1b[4;0$y"},
		{Event{Query: QuerySetting, Arg: "m"}, "\x1bP1$r0m\x1b\\"},
		{Event{Query: QuerySetting, Arg: " q"}, "\x1bP0$r\x1b\\"},
		{Event{Query: QueryTermcap, Arg: "544e;524742"}, "\x1bP0+r544e;524742\x1b\\"},
		{Event{Query: QueryWindow, Arg: "18", Rows: 24, Cols: 80}, "\x1b[8;24;80t"},
		{Event{Query: QueryWindow, Arg: "14", Rows: 24, Cols: 80}, "\x1b[4;384;640t"},
		{Event{Query: QueryWindow, Arg: "16", Rows: 24, Cols: 80}, "\x1b[6;16;8t"},
		{Event{Query: QueryPalette, Arg: "1;?;196;?;244;?"}, "\x1b]4;1;rgb:cdcd/0000/0000\x07\x1b]4;196;rgb:ffff/0000/0000\x07\x1b]4;244;rgb:8080/8080/8080\x07"},
		{Event{Query: QueryPalette, Arg: "1;rgb:0/0/0;?"}, ""},
	}
	for _, tc := range cases {
		if got := string(Answer(tc.e, 3, 7)); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.e.Query, got, tc.want)
		}
	}
}

// replies collects a model's answers; wait blocks until n have arrived.
type replies struct {
	mu   sync.Mutex
	cond *sync.Cond
	got  [][]byte
}

func newReplies() *replies { r := &replies{}; r.cond = sync.NewCond(&r.mu); return r }

func (r *replies) add(b []byte) {
	r.mu.Lock()
	r.got = append(r.got, b)
	r.mu.Unlock()
	r.cond.Broadcast()
}

func (r *replies) wait(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.got) < n {
		r.cond.Wait()
	}
	out := make([]string, len(r.got))
	for i, b := range r.got {
		out[i] = string(b)
	}
	return out
}

// TestModelAnswers: each query answered once, in order, CPR from the cursor after the
// output before the query, also when the query is split across writes.
func TestModelAnswers(t *testing.T) {
	t.Parallel()
	h := broadcast.New(0)
	r := newReplies()
	m := Follow(h, 24, 80, r.add)
	write := func(s string) { h.Write([]byte(s)); m.Kick() } // as a session's reader does
	write("hello\r\nworld\x1b[6")
	write("n more")
	write("\x1b[c\x1b]11;?\x1b\\\x1b[5n\x1b[10;20H\x1b[6n")
	h.Flush() // the producer pauses, as a session's reader says when a read finds nothing
	got := r.wait(5)
	write("tail")
	h.Close()
	m.Close()
	want := []string{"\x1b[2;6R", "\x1b[?1;2c", "\x1b]11;rgb:0000/0000/0000\x1b\\", "\x1b[0n", "\x1b[10;20R"}
	if !slices.Equal(got, want) {
		t.Fatalf("answers %q, want %q", got, want)
	}
	if got := r.wait(0); len(got) != 5 {
		t.Errorf("answered %d times", len(got))
	}
	s := m.Snapshot()
	if s.Rows[0] != "hello" || s.Rows[1] != "world more" || s.Rows[9] != strings.Repeat(" ", 19)+"tail" {
		t.Errorf("screen %q", s.Rows)
	}
}

// TestAnswererEndsWhenCaughtUp: the answerer runs only while output waits to be
// scanned: once it answered what was printed it ends (so a quiet stream has no
// goroutine of the model), the next Kick starts it again from where it stopped, with a
// query split across the pause still recognised, and Close finds nothing to stop.
func TestAnswererEndsWhenCaughtUp(t *testing.T) {
	t.Parallel()
	h := broadcast.New(0)
	r := newReplies()
	m := Follow(h, 24, 80, r.add)
	m.Kick() // nothing to scan yet: the run ends at once
	m.wg.Wait()
	h.Write([]byte("a\x1b[5n\x1b["))
	m.Kick()
	if got := r.wait(1); got[0] != "\x1b[0n" {
		t.Fatalf("first answer %q", got[0])
	}
	m.wg.Wait() // ends only if the answerer stops once caught up
	if m.running || m.AnsweredTo() != h.End() {
		t.Fatalf("after the pause: running %v, answered to %d of %d", m.running, m.AnsweredTo(), h.End())
	}
	h.Write([]byte("6n"))
	m.Kick()
	if got := r.wait(2); got[1] != "\x1b[1;2R" {
		t.Fatalf("the query split across the pause: answer %q", got[1])
	}
	m.wg.Wait()
	h.Close()
	m.Close()
	if got := r.wait(0); len(got) != 2 || m.AnsweredTo() != math.MaxInt64 {
		t.Errorf("after Close: %d answers, answered to %d", len(got), m.AnsweredTo())
	}
}

// TestAnswererRunStartsInAFlood: a run whose first round is a flood's (more than
// floodRound of output waited when it was kicked) waits per batch, and answers a query
// printed after the flood once the producer flushes at the pause.
func TestAnswererRunStartsInAFlood(t *testing.T) {
	t.Parallel()
	h := broadcast.New(0)
	r := newReplies()
	m := Follow(h, 24, 80, r.add)
	h.Write(bytes.Repeat([]byte("a"), 4*floodRound))
	m.Kick()
	for m.AnsweredTo() < 4*floodRound { // the run's first round has scanned the flood
		runtime.Gosched()
	}
	h.Write([]byte("\x1b[5n"))
	m.Kick()
	h.Flush() // the output paused: a reader finding the pty empty flushes
	if got := r.wait(1); got[0] != "\x1b[0n" {
		t.Fatalf("answer %q", got[0])
	}
	h.Close()
	m.Close()
}

// TestFloodAfter: a flood starts with a large round and lasts through the small rounds
// that the reader's Flushes cause within it; only a round that found nothing ends it.
func TestFloodAfter(t *testing.T) {
	for _, c := range []struct {
		flood bool
		round int64
		want  bool
	}{
		{false, 0, false},
		{false, 4 << 10, false},
		{false, floodRound, false},
		{false, floodRound + 1, true},
		{true, 4 << 10, true}, // a Flush within the flood
		{true, 1, true},
		{true, 0, false}, // caught up at a Flush: the output paused
		{true, 1 << 20, true},
	} {
		if got := floodAfter(c.flood, c.round); got != c.want {
			t.Errorf("floodAfter(%v, %d) = %v, want %v", c.flood, c.round, got, c.want)
		}
	}
}

// TestModelFlood: far more output than the emulator could process in time is skipped,
// the screen is still right, and modes set in the skipped part survive.
func TestModelFlood(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		head   string // before the flood
		flood  string // repeated
		n      int
		tail   string
		rows   []string // the last rows (bottom of the screen), or the first ones (top)
		top    bool
		alt    bool
		hidden bool
	}{
		{"lines", "", "line of text\r\n", 200000, "end", []string{"line of text", "line of text", "end"}, false, false, false},
		{"no newlines", "", "a", 3 << 20, "\r\nend", []string{strings.Repeat("a", 80), strings.Repeat("a", 48), "end"}, false, false, false},
		{"alt and hidden cursor in skipped part", "\x1b[?1049h\x1b[?25l", "x\r\n", 500000, "\x1b[Hdone", []string{"done", "x"}, true, true, true},
		{"left alt in skipped part", "\x1b[?1049h", "y\r\n", 500000, "\x1b[?1049lback\r\n", nil, false, false, false},
		{"clear in tail", "", "z\r\n", 500000, "\x1b[H\x1b[2Jclean", []string{"clean", ""}, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := broadcast.New(1 << 20)
			m := Follow(h, 24, 80, nil)
			defer m.Close()
			h.Write([]byte(tc.head))
			m.Snapshot() // the emulator exists and is behind from here on
			chunk := []byte(strings.Repeat(tc.flood, max(1, 4096/len(tc.flood))))
			for w := 0; w < tc.n*len(tc.flood); w += len(chunk) {
				h.Write(chunk)
			}
			h.Write([]byte(tc.tail))
			s := m.Snapshot()
			got := s.Rows[len(s.Rows)-len(tc.rows):]
			if tc.top {
				got = s.Rows[:len(tc.rows)]
			}
			if !slices.Equal(got, tc.rows) {
				t.Errorf("rows %q, want %q", got, tc.rows)
			}
			if s.AltScreen != tc.alt || s.CursorHidden != tc.hidden {
				t.Errorf("alt %v hidden %v, want %v %v", s.AltScreen, s.CursorHidden, tc.alt, tc.hidden)
			}
		})
	}
}

// TestModelResize: output before a resize is laid out at the old size, after it at the
// new one.
func TestModelResize(t *testing.T) {
	t.Parallel()
	h := broadcast.New(0)
	m := Follow(h, 4, 10, nil)
	defer m.Close()
	h.Write([]byte("0123456789ab"))
	m.Resize(4, 20)
	h.Write([]byte("\r\n0123456789abcdef"))
	s := m.Snapshot()
	want := []string{"0123456789", "ab", "0123456789abcdef", ""}
	if !slices.Equal(s.Rows, want) {
		t.Errorf("rows %q, want %q", s.Rows, want)
	}
}

// TestModelAfterClose: the final screen stays readable, also when never rendered before.
func TestModelAfterClose(t *testing.T) {
	t.Parallel()
	for _, early := range []bool{false, true} {
		h := broadcast.New(0)
		m := Follow(h, 3, 10, func([]byte) {})
		h.Write([]byte("bye\x1b[?25l"))
		if early {
			m.Snapshot()
		}
		h.Close()
		m.Close()
		m.Close()
		s := m.Snapshot()
		if s.Rows[0] != "bye" || !s.CursorHidden || func() bool { d, next := m.Repaint(); return len(d) == 0 || next != h.End() }() {
			t.Errorf("early %v: %+v", early, s)
		}
	}
}

// BenchmarkScanner: the answerer's cost per byte, on plain and on escape-heavy output,
// in 4 KiB chunks as the pty delivers them.
func BenchmarkScanner(b *testing.B) {
	for _, bc := range []struct{ name, unit string }{
		{"plain", "a"},
		{"sgr-heavy", "\x1b[1;31mx\x1b[0m "},
	} {
		chunk := []byte(strings.Repeat(bc.unit, 4096/len(bc.unit)))
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(chunk)))
			var sc Scanner
			for i := range b.N {
				sc.Scan(chunk, int64(i*len(chunk)), nil)
			}
		})
	}
}

// BenchmarkSnapshotAfterFlood: what one screen read costs when the emulator is far
// behind (it skips ahead and replays at most two windows).
func BenchmarkSnapshotAfterFlood(b *testing.B) {
	chunk := []byte(strings.Repeat("line of flood text\r\n", 200))
	for range b.N {
		b.StopTimer()
		h := broadcast.New(0)
		m := Follow(h, 24, 80, nil)
		for range (4 << 20) / len(chunk) {
			h.Write(chunk)
		}
		b.StartTimer()
		m.Snapshot()
		b.StopTimer()
		m.Close()
	}
}

// The queries real programs send at start and on exit (vim, neovim, tmux, fish,
// bubbletea, crossterm) are recognised and answered; the kitty keyboard query is left
// unanswered, as a terminal without that protocol does: programs send it with a DA1
// after it and take the DA1 answer as "not supported".
func TestQueriesAnswered(t *testing.T) {
	t.Parallel()
	var sc Scanner
	sc.Scan([]byte("\x1b[?u"), 0, func(e Event) {
		if e.Kind == EventQuery {
			t.Errorf("the kitty keyboard query recognised as query %v", e.Query)
		}
	})
	for q, want := range map[string]Query{"\x1b[6n": QueryCPR, "\x1b[5n": QueryStatus, "\x1b[c": QueryDA1, "\x1b[>c": QueryDA2,
		"\x1b]10;?\x07": QueryFg, "\x1b]11;?\x1b\\": QueryBg, "\x1b[?2004$p": QueryMode, "\x1b[4$p": QueryMode,
		"\x1b[>q": QueryVersion, "\x1b[>0q": QueryVersion, "\x1b]4;1;?\x07": QueryPalette, "\x1b]12;?\x1b\\": QueryCursorColour,
		"\x1bP$qm\x1b\\": QuerySetting, "\x1bP+q544e\x1b\\": QueryTermcap, "\x1b[=c": QueryDA3, "\x1b[18t": QueryWindow} {
		var sc Scanner
		var got Event
		sc.Scan([]byte(q), 0, func(e Event) {
			if e.Kind == EventQuery {
				got = e
			}
		})
		if got.Query != want || len(Answer(got, 1, 1)) == 0 {
			t.Errorf("%q: query %v, want %v answered", q, got.Query, want)
		}
	}
	// DECRQM reports the modes the scanner tracks as they are at the query.
	sc = Scanner{}
	var states []int
	sc.Scan([]byte("\x1b[?25$p\x1b[?25l\x1b[?25$p\x1b[?1049h\x1b[?1049$p\x1b[?2004$p"), 0, func(e Event) {
		if e.Query == QueryMode {
			states = append(states, e.ModeState)
		}
	})
	if !slices.Equal(states, []int{1, 2, 1, 0}) {
		t.Errorf("DECRQM states %v, want [1 2 1 0]", states)
	}
}

// TestModelOfAQuietStreamIsSmall: a Model, made for every session at its start, holds
// no scanner until it needs one (the answerer's at the first output, the mode tracker's
// with the emulator, the input modes' at the first InputModes): it stays within the
// allocator's 288-byte size class, where three embedded scanners put it in the 576-byte
// one. The scanners still see every byte once made: the answerer scans from offset 0.
func TestModelOfAQuietStreamIsSmall(t *testing.T) {
	if size := unsafe.Sizeof(Model{}); size > 288 {
		t.Errorf("Model is %d bytes, over the 288-byte size class", size)
	}
	h := broadcast.New(0)
	m := Follow(h, 24, 80, func([]byte) {})
	if m.asc != nil || m.ms != nil || m.im != nil {
		t.Fatal("a model of a stream with no output made a scanner")
	}
	h.Write([]byte("\x1b[?1h"))
	if !m.InputModes().CursorKeys {
		t.Error("the input modes missed the output written before the first InputModes")
	}
	h.Close()
	m.Close()
}

// goid returns the calling goroutine's id, from its stack's header.
func goid() string {
	var b [64]byte
	s := string(b[:runtime.Stack(b[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	return s[:strings.IndexByte(s, ' ')]
}

// TestKickAnswersSmallWriteInline: the queries of a small write are answered by Kick
// itself, in the producer's goroutine, before it returns, with everything answered and
// no answerer left running; a cursor position query, whose answer needs the emulator,
// is answered by the answerer goroutine (the emulator stays off the producer's path),
// after the queries before it in the same write.
func TestKickAnswersSmallWriteInline(t *testing.T) {
	t.Parallel()
	h := broadcast.New(0)
	var mu sync.Mutex
	var got, where []string
	m := Follow(h, 24, 80, func(b []byte) {
		mu.Lock()
		got, where = append(got, string(b)), append(where, goid())
		mu.Unlock()
	})
	me := goid()
	h.Write([]byte("x\x1b[5n\x1b[c"))
	m.Kick()
	mu.Lock()
	if !slices.Equal(got, []string{"\x1b[0n", "\x1b[?1;2c"}) || !slices.Equal(where, []string{me, me}) {
		t.Errorf("after Kick returned: answers %q, from goroutines %v (the producer is %s)", got, where, me)
	}
	mu.Unlock()
	m.run.Lock()
	running := m.running
	m.run.Unlock()
	if running || m.AnsweredTo() != h.End() {
		t.Errorf("after Kick returned: running %v, answered to %d of %d", running, m.AnsweredTo(), h.End())
	}

	h.Write([]byte("\x1b[5n\x1b[6n"))
	m.Kick()
	m.wg.Wait()
	mu.Lock()
	if !slices.Equal(got[2:], []string{"\x1b[0n", "\x1b[1;2R"}) || where[2] == me || where[3] == me {
		t.Errorf("with a cursor position query: answers %q from goroutines %v (the producer is %s)", got[2:], where[2:], me)
	}
	mu.Unlock()
	if m.AnsweredTo() != h.End() {
		t.Errorf("answered to %d of %d", m.AnsweredTo(), h.End())
	}
	h.Close()
	m.Close()
}

// TestAnsweredCh: the channel of an offset closes only once every query before it has
// been handed to reply (a cursor position query, answered by the goroutine, is held up
// here in reply), at once for an offset already answered or a model that answers
// nothing, and at Close for an offset never reached.
func TestAnsweredCh(t *testing.T) {
	t.Parallel()
	h := broadcast.New(0)
	gate := make(chan struct{})
	var replied atomic.Int32
	m := Follow(h, 24, 80, func([]byte) {
		<-gate
		replied.Add(1)
	})
	h.Write([]byte("ab\x1b[6n"))
	m.Kick()
	ch := m.AnsweredCh(h.End())
	beyond := m.AnsweredCh(h.End() + 1)
	select {
	case <-ch:
		t.Fatal("closed before the answer was handed to reply")
	default:
	}
	close(gate)
	<-ch
	if replied.Load() != 1 {
		t.Fatalf("closed with %d answers handed to reply", replied.Load())
	}
	select {
	case <-m.AnsweredCh(h.End()):
	default:
		t.Error("an offset already answered: the channel is not closed")
	}
	select {
	case <-beyond:
		t.Fatal("an offset not yet printed: the channel is closed")
	default:
	}
	h.Close()
	m.Close()
	<-beyond // Close: nothing more is owed

	quiet := Follow(broadcast.New(0), 24, 80, nil)
	select {
	case <-quiet.AnsweredCh(1 << 40):
	default:
		t.Error("a model that answers nothing: the channel is not closed")
	}
}

// TestKickWroteAnswersInPlace: a producer that hands each write to KickWrote, as a
// session's reader does, gets every query answered once and in order, including queries
// split across writes at every byte, while the inline scan reads each write where it is;
// after each write the model has scanned the stream to its end.
func TestKickWroteAnswersInPlace(t *testing.T) {
	t.Parallel()
	queries := []struct{ q, a string }{
		{"\x1b[5n", "\x1b[0n"},
		{"\x1b[c", "\x1b[?1;2c"},
		{"\x1b]11;?\x1b\\", "\x1b]11;rgb:0000/0000/0000\x1b\\"},
	}
	var stream []byte
	var want []string
	for i := range 60 {
		q := queries[i%len(queries)]
		stream = append(stream, strings.Repeat("text ", i%7)...)
		stream = append(stream, q.q...)
		want = append(want, q.a)
	}
	for _, chunk := range []int{1, 2, 3, 5, 7, 11, 64} {
		h := broadcast.New(0)
		r := newReplies()
		m := Follow(h, 24, 80, r.add)
		for p := stream; len(p) > 0; {
			w := p[:min(chunk, len(p))]
			p = p[len(w):]
			h.Write(w)
			m.KickWrote(w)
			m.wg.Wait() // each write is small: scanned inline, no answerer left running
			if got := m.AnsweredTo(); got != h.End() {
				t.Fatalf("chunks of %d: answered to %d after a write, stream at %d", chunk, got, h.End())
			}
		}
		h.Close()
		m.Close()
		if got := r.wait(0); !slices.Equal(got, want) {
			t.Fatalf("chunks of %d: %d answers, want %d; first %q", chunk, len(got), len(want), got[:min(3, len(got))])
		}
	}
}

// BenchmarkKickFlood: what a session's reader pays the model per 4 KiB read of a flood
// (the hub's Write, then the inline scan): Kick copies the write back out of the hub to
// scan it, KickWrote scans it where it is.
func BenchmarkKickFlood(b *testing.B) {
	chunk := bytes.Repeat([]byte("a"), 4<<10)
	for _, c := range []struct {
		name string
		kick func(m *Model)
	}{{"Kick", func(m *Model) { m.Kick() }}, {"KickWrote", func(m *Model) { m.KickWrote(chunk) }}} {
		b.Run(c.name, func(b *testing.B) {
			h := broadcast.New(0)
			m := Follow(h, 24, 80, func([]byte) {})
			b.SetBytes(int64(len(chunk)))
			for b.Loop() {
				h.Write(chunk)
				c.kick(m)
			}
			h.Close()
			m.Close()
		})
	}
}
