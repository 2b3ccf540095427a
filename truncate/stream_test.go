package truncate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/termtext"
)

// streamResult writes raw to a Stream in reads of read bytes and returns its result and
// whether it went into flood mode.
func streamResult(raw []byte, budget, read int, noFlood bool) (Result, bool) {
	var conv termtext.Converter
	var lineFrom int64
	st := NewStream(budget, read, &conv, &lineFrom)
	if noFlood {
		st.NoFlood()
	}
	flooded := false
	for at := 0; at < len(raw); at += read {
		st.Write(raw[at:min(at+read, len(raw))], int64(at))
		flooded = flooded || st.Flooding()
	}
	return st.Result(int64(len(raw)), true), flooded
}

// A flood (output past the head and tail of the budget, nobody needing its text) is kept
// raw and converted at the end; the agent sees the same text, count and cut range as if
// every byte had been converted.
func TestStreamFloodSameResult(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; b.Len() < 4<<20; i++ {
		fmt.Fprintf(&b, "\x1b[32mline %d\x1b[0m of the flood, ok\r\n", i)
	}
	raw := []byte(b.String())
	for _, budget := range []int{100, DefaultBudget} {
		flood, flooded := streamResult(raw, budget, 32<<10, false)
		whole, wholeFlooded := streamResult(raw, budget, 32<<10, true)
		if !flooded {
			t.Errorf("budget %d: %d bytes of output never went into flood mode", budget, len(raw))
		}
		if wholeFlooded {
			t.Errorf("budget %d: flood mode after NoFlood", budget)
		}
		if !flood.Truncated || flood.Text != whole.Text || flood.OriginalTokens != whole.OriginalTokens ||
			flood.CutFrom != whole.CutFrom || flood.CutTo != whole.CutTo {
			t.Errorf("budget %d: flood mode gave %d tokens cut [%d, %d):\n%.300q\nconverting every byte gave %d tokens cut [%d, %d):\n%.300q",
				budget, flood.OriginalTokens, flood.CutFrom, flood.CutTo, flood.Text, whole.OriginalTokens, whole.CutFrom, whole.CutTo, whole.Text)
		}
	}
}

// Output within the budget never goes into flood mode and comes back whole, with its
// unfinished last line, in any read size.
func TestStreamWithinBudget(t *testing.T) {
	t.Parallel()
	raw := []byte("one\r\ntwo\r\n\x1b[1mthree\x1b[0m")
	for read := 1; read <= len(raw); read++ {
		r, flooded := streamResult(raw, 1000, read, false)
		if flooded || r.Truncated || r.Text != "one\ntwo\nthree" {
			t.Errorf("reads of %d: flooded %v, truncated %v, text %q", read, flooded, r.Truncated, r.Text)
		}
	}
}

// The kept end of a flood starts at a line: after its first newline when that leaves
// enough, else at a character start outside any escape sequence.
func TestTailStart(t *testing.T) {
	t.Parallel()
	lines := []byte("abc\ndef\nghi\n")
	if got := tailStart(lines, 4); got != 4 {
		t.Errorf("lines: cut at %d, want 4 (after the first newline)", got)
	}
	if got := tailStart(lines, len(lines)); got != 0 {
		t.Errorf("keep everything: cut at %d, want 0", got)
	}
	long := []byte("xxxxxxé\x1b[31mred")
	got := tailStart(long, 8) // the limit falls inside "\x1b[31m"
	if string(long[got:]) != "\x1b[31mred" {
		t.Errorf("one line: kept %q, want the whole escape sequence and what follows", long[got:])
	}
	utf := []byte("aaaaébc")
	if got := tailStart(utf, 2); string(utf[got:]) != "bc" { // the limit falls inside é
		t.Errorf("a cut inside é kept %q, want the characters after it", utf[got:])
	}
}
