// Package truncate cuts terminal output to a token budget, as an agent sees
// it: the whole text when it fits, else its head and tail, half the budget
// each, around one marker line "…N tokens truncated…".
//
// Tokens are o200k_base tokens, counted exactly on text of about the budget's
// size and estimated cheaply beyond it (Tokens, Estimate). Cuts fall on line
// boundaries where one is near, and never inside a UTF-8 character, between
// '\r' and '\n', or inside an escape sequence. A Collector takes a stream in
// chunks, each tagged with the raw byte range it came from, holds only
// budget-sized head and tail buffers, and reports the raw range that was cut
// so that nothing is out of reach.
package truncate

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Budgets, in tokens.
const (
	DefaultBudget = 10000
	// MinBudget is the smallest budget. A truncated result always shows its
	// marker line (about 8 tokens), so below about 10 tokens it is only the
	// marker and exceeds the budget; text of up to 10 tokens is never
	// truncated, since the marker would be longer.
	MinBudget = 1
	MaxBudget = 250000
)

// Clamp returns budget within [MinBudget, MaxBudget]; 0 and negative budgets
// become MinBudget (rejecting them is the API layer's call).
func Clamp(budget int64) int {
	return int(min(max(budget, MinBudget), MaxBudget))
}

// Result is what an agent sees of some text, and what it does not.
type Result struct {
	Text      string // the whole text, or head + marker line + tail
	Truncated bool
	// OriginalTokens counts the whole input: exactly when it was held whole
	// and near the budget, else the shown part exactly and the cut part
	// estimated; 0 when it was shown whole without a count, being at most
	// budget/maxTokensPerByte bytes long.
	OriginalTokens int
	// CutFrom and CutTo are the raw offsets covering every byte whose text
	// was cut. They are widened to whole chunks, so they may cover a few
	// shown bytes but never miss a cut one. Both are 0 when nothing was cut.
	CutFrom, CutTo int64

	kept            int // tokens shown, when Truncated
	markAt, markEnd int // the marker's count and words within Text, when Truncated
}

// SetOriginal sets OriginalTokens to n, a better count of the whole input than the
// Collector's own, and makes the marker line agree with it: it then names n minus the
// tokens shown (at least 1) as truncated. It does nothing to a Result that is not
// truncated.
func (r *Result) SetOriginal(n int) {
	if !r.Truncated || r.markEnd == 0 {
		return
	}
	m := marker(max(n-r.kept, 1))
	r.Text = r.Text[:r.markAt] + m + r.Text[r.markEnd:]
	r.markEnd = r.markAt + len(m)
	r.OriginalTokens = n
}

// Middle truncates a whole string; its raw offsets are offsets in text.
func Middle(text string, budget int) Result {
	c := NewCollector(budget)
	c.identity = true
	write(c, text, 0, int64(len(text)), false)
	return c.Result()
}

// markerTokens is what the marker line costs, taken out of the budget:
// "\n…1234567 tokens truncated…\n" is 8 tokens.
const markerTokens = 10

// maxTokensPerByte bounds the tokens of a text by its length: a token covers at least
// one byte, except that each byte that is not UTF-8 is read as U+FFFD, whose three bytes
// may be three tokens.
const maxTokensPerByte = 3

func marker(n int) string {
	return "…" + strconv.Itoa(n) + " tokens truncated…"
}

// join returns head, the marker line, and tail, and where the marker (without its line
// ends) starts and ends in that text.
func join(head string, n int, tail string) (text string, at, end int) {
	var b strings.Builder
	b.WriteString(head)
	if head != "" && !strings.HasSuffix(head, "\n") {
		b.WriteByte('\n')
	}
	at = b.Len()
	b.WriteString(marker(n))
	end = b.Len()
	b.WriteByte('\n')
	b.WriteString(tail)
	return b.String(), at, end
}

// headCut returns where to end a head of s of at most about k tokens. more
// says that text follows s (s is a buffer's start, not the whole text).
func headCut(s string, k int, more bool) int {
	off := prefixLen(s, k)
	if off == len(s) && !more {
		return off
	}
	off = runeBack(s, off)
	if n := slack(off); n > 0 {
		if i := strings.LastIndexByte(s[off-n:off], '\n'); i >= 0 {
			off += i + 1 - n
		}
	}
	if off > 0 && s[off-1] == '\r' { // never end on a '\r' that a '\n' may follow
		off--
	}
	return escBack(s, off)
}

// tailCut returns where to start a tail of s of at most about k tokens. s is
// the text's end; its start need not be the text's (nor a line's).
func tailCut(s string, k int) int {
	off := suffixStart(s, k)
	if off == len(s) {
		return off
	}
	off = runeForward(s, off)
	if off == 0 || s[off-1] != '\n' {
		n := slack(len(s) - off)
		if i := strings.IndexByte(s[off:off+n], '\n'); i >= 0 {
			off += i + 1
		}
	}
	if off < len(s) && s[off] == '\n' && (off == 0 || s[off-1] == '\r') {
		off++ // never start on a '\n' that a '\r' may precede
	}
	return escForward(s, off)
}

// slack is how far a cut keeping n bytes moves to reach a line boundary:
// 10%, at least 256 bytes, at most half.
func slack(n int) int {
	return min(max(n/10, 256), n/2)
}

// runeBack moves off back to the start of the UTF-8 sequence it splits, if any.
func runeBack(s string, off int) int {
	for i := off - 1; i >= 0 && i >= off-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(s[i]) {
			if i+seqLen(s[i]) > off {
				return i
			}
			break
		}
	}
	return off
}

// runeForward moves off past the continuation bytes it points at (at most 3).
func runeForward(s string, off int) int {
	for i := 1; i < utf8.UTFMax && off < len(s) && !utf8.RuneStart(s[off]); i++ {
		off++
	}
	return off
}

// seqLen is the length of the UTF-8 sequence that lead byte b starts.
func seqLen(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	default:
		return 4
	}
}

// Escape sequences are atomic: a cut inside one moves to its start (head) or
// past its end (tail). A sequence is looked for up to maxEsc bytes back.
const (
	esc    = 0x1b
	maxEsc = 256
)

func lastEsc(s string, off int) int {
	from := max(0, off-maxEsc)
	if i := strings.LastIndexByte(s[from:off], esc); i >= 0 {
		return from + i
	}
	return -1
}

func escBack(s string, off int) int {
	// Again from the new cut: it may be the ESC of an ST that ends a string.
	for i := lastEsc(s, off); i >= 0; i = lastEsc(s, off) {
		if end := escEnd(s, i); end >= 0 && end <= off {
			break
		}
		off = i
	}
	return off
}

func escForward(s string, off int) int {
	if i := lastEsc(s, off); i >= 0 {
		if end := escEnd(s, i); end > off {
			return end
		}
	}
	return off
}

// escEnd returns the offset just past the escape sequence that starts at
// s[i] (ESC), or -1 if s ends first. It knows CSI (ESC [ params final),
// strings (OSC, DCS, SOS, PM, APC, ended by BEL or ESC \) and the short
// ESC intermediates final form; a byte that does not belong ends a
// sequence early.
func escEnd(s string, i int) int {
	i++
	if i >= len(s) {
		return -1
	}
	switch s[i] {
	case '[':
		for i++; i < len(s); i++ {
			switch c := s[i]; {
			case 0x40 <= c && c <= 0x7e:
				return i + 1
			case c < 0x20 || c > 0x3f:
				return i
			}
		}
	case ']', 'P', 'X', '^', '_':
		for i++; i < len(s); i++ {
			switch s[i] {
			case 0x07:
				return i + 1
			case esc:
				if i+1 < len(s) && s[i+1] == '\\' {
					return i + 2
				}
				if i+1 < len(s) {
					return i
				}
				return -1
			}
		}
	default:
		for ; i < len(s); i++ {
			switch c := s[i]; {
			case 0x30 <= c && c <= 0x7e:
				return i + 1
			case c < 0x20 || c > 0x2f:
				return i
			}
		}
	}
	return -1
}
