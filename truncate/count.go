package truncate

import (
	"iter"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"
)

// o200k is the exact tokenizer. It is built on first use (about 20 ms), so a
// process that never counts does not pay for it.
var o200k = sync.OnceValue(codec.NewO200kBase)

// Count returns the number of o200k_base tokens in s.
//
// It is exact, except inside runs of whitespace longer than 1 KiB that have
// no line start to split at, which are counted in pieces (a token or so per
// piece). It runs at about 3–10 MB/s, so use it on text of about the
// budget's size; Tokens decides when that is.
func Count(s string) int {
	n := 0
	for seg := range segments(s) {
		k, err := o200k().Count(seg)
		if err != nil { // only a regexp timeout fails, and none is set
			k = Estimate(seg)
		}
		n += k
	}
	return n
}

// tokenEnds returns the offset in s just past each of s's tokens.
func tokenEnds(s string) []int {
	var ends []int
	start := 0
	for seg := range segments(s) {
		_, toks, err := o200k().Encode(seg)
		off := start
		for _, t := range toks {
			// Clamped: on invalid UTF-8 a token's text holds U+FFFD (3 bytes) for one
			// input byte, and the offsets would run past the segment.
			off = min(off+len(t), start+len(seg))
			ends = append(ends, off)
		}
		start += len(seg)
		if err != nil && off < start { // as in Count: cannot happen
			ends = append(ends, start)
		}
	}
	return ends
}

// Tokens returns the token count of s for a decision against budget: exact
// (Count) when s is short (4 KiB) or estimated within ½–2× of the budget, else
// the estimate, with exact false. The estimate runs 0.58–1.5× the exact count
// on terminal output (see Estimate), so an inexact answer above the budget
// still means "over budget" and one below it means "fits", and megabytes are
// not counted at ~5 MB/s to learn either.
func Tokens(s string, budget int) (n int, exact bool) {
	if len(s) > 4<<10 {
		// Far from the budget either way, the estimate decides: above 2× it certainly
		// does not fit; below ½ it certainly does (the estimator's worst under-count is
		// 0.58×, so the exact count is then under 0.86× the budget).
		b := Clamp(int64(budget))
		if e := Estimate(s); e > 2*b || 2*e < b {
			return e, false
		}
	}
	return Count(s), true
}

// Estimate returns a cheap estimate of Count(s), at about 800 MB/s. On
// terminal output (listings, logs, JSON, code, hex dumps, base64, tables,
// prose in many scripts) it is within 0.7x–1.5x of the exact count, tending
// high; TestEstimateError prints the table. Long runs of one character are
// its weak spot: 3.3x high for spaces, 0.1x for '░' (o200k merges some
// characters' runs into long tokens and not others').
func Estimate(s string) int {
	var e estimator
	addEstimate(&e, s)
	return e.tokens()
}

// The estimator charges each byte by its class and whether it repeats the
// previous character (runs of spaces, rules and box drawing merge into long
// tokens), starts a new class (a new word, number or symbol run), or
// continues one. Weights are in thousandths of a token, fitted by least
// squares (relative error, non-negative) on ~45 samples of terminal output
// and text, then raised 15% so that it errs high; a few cells that the
// samples barely reach were set by hand (space after tab, lead after lead,
// a 2-byte character repeated).
const (
	lower   = iota // a-z
	upper          // A-Z
	digit          // 0-9
	space          // ' ', '\t'
	newline        // '\n', '\r'
	punct          // other ASCII: punctuation, controls
	lead           // UTF-8 lead byte (and 0xF8-0xFF)
	cont           // UTF-8 continuation byte

	same    = 0
	repeat  = 1 // the byte before, or three before (a 3-byte character)
	change  = 2
	repeat2 = 3 // a 2-byte character again: o200k rarely merges those
)

var weights = [4][8]uint32{
	same:    {lower: 240, upper: 298, digit: 373, space: 1150, newline: 288, punct: 337, lead: 1150, cont: 445},
	repeat:  {lower: 175, upper: 143, digit: 298, space: 26, newline: 79, punct: 18, lead: 0, cont: 47},
	change:  {lower: 231, upper: 649, digit: 2312, space: 109, newline: 1329, punct: 666, lead: 470, cont: 0},
	repeat2: {lead: 470, cont: 400},
}

var byteClass = func() (c [256]uint8) {
	for b := range 256 {
		switch {
		case 'a' <= b && b <= 'z':
			c[b] = lower
		case 'A' <= b && b <= 'Z':
			c[b] = upper
		case '0' <= b && b <= '9':
			c[b] = digit
		case b == ' ' || b == '\t':
			c[b] = space
		case b == '\n' || b == '\r':
			c[b] = newline
		case b < 0x80:
			c[b] = punct
		case b < 0xC0:
			c[b] = cont
		default:
			c[b] = lead
		}
	}
	return c
}()

// byClasses holds the same and change weights by the classes of the byte
// before and of the byte: weight's lookup without a branch.
var byClasses = func() (w [64]uint32) {
	for prev := range 8 {
		for c := range 8 {
			w[prev<<3|c] = weights[same][c]
			if prev != c {
				w[prev<<3|c] = weights[change][c]
			}
		}
	}
	return w
}()

// weight is what byte b costs after the bytes p1, p2, p3 before it; c1 is
// p1's class. (Written for speed: about 800 MB/s in addEstimate.)
func weight(b, p1, p2, p3, c1 byte) uint32 {
	c := byteClass[b] & 7
	w, wr := byClasses[c1<<3|c], weights[repeat][c]
	if b == p1 {
		w = wr
	}
	if b >= 0x80 {
		if b == p3 {
			w = wr
		} else if b == p2 && p1 == p3 {
			w = weights[repeat2][c]
		}
	}
	return w
}

// estimator is Estimate as a stream: bytes can arrive in any pieces.
type estimator struct {
	milli      uint64 // thousandths of a token
	p1, p2, p3 byte   // the last three bytes; text starts as if after "\n\n\n"
	started    bool
}

func (e *estimator) tokens() int { return int((e.milli + 999) / 1000) }

func addEstimate[T string | []byte](e *estimator, p T) {
	if !e.started {
		e.p1, e.p2, e.p3, e.started = '\n', '\n', '\n', true
	}
	m, p1, p2, p3 := e.milli, e.p1, e.p2, e.p3
	c1 := byteClass[p1]
	for i := 0; i < len(p); i++ {
		b := p[i]
		m += uint64(weight(b, p1, p2, p3, c1))
		p1, p2, p3, c1 = b, p1, p2, byteClass[b]
	}
	e.milli, e.p1, e.p2, e.p3 = m, p1, p2, p3
}

// estimatedPrefix returns the length of the shortest prefix of s estimated at
// n tokens or more, or len(s).
func estimatedPrefix(s string, n int) int {
	want := uint64(n) * 1000
	var m uint64
	for i := range len(s) {
		if m += uint64(weightAt(s, i)); m >= want {
			return i + 1
		}
	}
	return len(s)
}

// estimatedSuffix returns the start of the shortest suffix of s estimated at
// n tokens or more, or 0. (A byte's weight depends only on the bytes before
// it, so the sum is the same in both directions.)
func estimatedSuffix(s string, n int) int {
	want := uint64(n) * 1000
	var m uint64
	for i := len(s) - 1; i >= 0; i-- {
		if m += uint64(weightAt(s, i)); m >= want {
			return i
		}
	}
	return 0
}

// weightAt is the weight of s[i] in s (as if "\n\n\n" came before s).
func weightAt(s string, i int) uint32 {
	at := func(j int) byte {
		if j < 0 {
			return '\n'
		}
		return s[j]
	}
	return weight(s[i], at(i-1), at(i-2), at(i-3), byteClass[at(i-1)])
}

// Splitting for the tokenizer. The o200k pre-tokenizer never joins text
// across a line start, that is between '\n' and a byte other than '\n', '\r'
// or '/' (TestSegmentsExact checks it), so counts of such pieces add up
// exactly. Its regexp takes quadratic time in runs of whitespace that hold
// line breaks (" \n" × 16K: 0.7 s), so long runs are cut often.
const (
	segLen   = 16 << 10 // usual piece size
	wsSplit  = 256      // inside a whitespace run, cut at line starts this often
	wsForced = 1 << 10  // and anywhere (inexactly) this often when there are none
)

func segments(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start, ws := 0, 0 // ws: where the whitespace run ending at i-1 began
		for i := 1; i < len(s); i++ {
			if !isSpace(s[i-1]) {
				ws = i
			}
			n, run := i-start, i-ws
			lineStart := s[i-1] == '\n' && s[i] != '\n' && s[i] != '\r' && s[i] != '/'
			if lineStart && (n >= segLen || n >= wsSplit && run >= wsSplit) ||
				n >= wsForced && run >= wsForced {
				if !yield(s[start:i]) {
					return
				}
				start = i
			}
		}
		if start < len(s) {
			yield(s[start:])
		}
	}
}

func isSpace(b byte) bool {
	return b == ' ' || '\t' <= b && b <= '\r'
}

// prefixLen returns the length of the longest prefix of s that holds at most
// k of s's tokens. It tokenizes only a little more than that prefix.
func prefixLen(s string, k int) int {
	if k <= 0 {
		return 0
	}
	for want := k + k/4 + 64; ; want *= 2 {
		lim := estimatedPrefix(s, want)
		ends := tokenEnds(s[:lim])
		// Tokens next to the cut at lim may differ from s's own; keep clear.
		if lim == len(s) && len(ends) <= k {
			return len(s)
		}
		if lim == len(s) || len(ends) >= k+8 {
			return ends[k-1]
		}
	}
}

// suffixStart returns the start of the longest suffix of s that holds at most
// k of s's tokens, tokenizing only a little more than that suffix.
func suffixStart(s string, k int) int {
	if k <= 0 {
		return len(s)
	}
	for want := k + k/4 + 64; ; want *= 2 {
		at := estimatedSuffix(s, want)
		from := runeForward(s, at)
		ends := tokenEnds(s[from:])
		// Tokens next to the cut at from may differ from s's own; keep clear.
		if len(ends) > k && (at == 0 || len(ends) >= k+8) {
			return from + ends[len(ends)-k-1]
		}
		if at == 0 {
			return from
		}
	}
}

// Estimator is Estimate as a stream: bytes can arrive in any pieces and the estimate
// is the same. The zero value is ready to use.
type Estimator struct{ e estimator }

// Write adds p.
func (e *Estimator) Write(p []byte) { addEstimate(&e.e, p) }

// Milli returns the estimate so far in thousandths of a token.
func (e *Estimator) Milli() uint64 { return e.e.milli }
