package truncate

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClamp(t *testing.T) {
	for in, want := range map[int64]int{
		math.MinInt64: MinBudget, -1: MinBudget, 0: MinBudget, 1: 1,
		DefaultBudget: DefaultBudget, MaxBudget + 1: MaxBudget, 1e18: MaxBudget, math.MaxInt64: MaxBudget,
	} {
		if got := Clamp(in); got != want {
			t.Errorf("Clamp(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestMiddleFits(t *testing.T) {
	ss := samples(t)
	ss["empty"] = ""
	ss["two tokens, budget 1"] = "ok\n" // never replaced by a longer marker
	for name, s := range ss {
		r := Middle(s, 1)
		if Count(s) > markerTokens {
			r = Middle(s, Count(s))
		}
		want := Result{Text: s, OriginalTokens: Count(s)}
		if len(s) <= max(Count(s), markerTokens)/maxTokensPerByte {
			want.OriginalTokens = 0 // short enough to fit uncounted
		}
		if r != want {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

// A text short enough to fit whatever it holds is shown whole without a count (so the
// tokenizer is not built for it); one byte longer, it is counted.
func TestShortResultNotCounted(t *testing.T) {
	const budget = 300
	short := strings.Repeat("a", budget/maxTokensPerByte)
	if r := Middle(short, budget); r != (Result{Text: short}) {
		t.Errorf("short text: %+v, want it whole and uncounted", r)
	}
	longer := short + "b"
	if r := Middle(longer, budget); r != (Result{Text: longer, OriginalTokens: Count(longer)}) {
		t.Errorf("longer text: %+v, want it whole and counted", r)
	}
}

// The bound the uncounted results rely on: no text has more than maxTokensPerByte tokens
// a byte, bytes that are not UTF-8 included.
func TestCountBoundedByLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := [][]byte{
		{0x80, 0xff, 0xc3, 0xe2, 0xf0, 0xa0, 0xbf}, // stray and cut UTF-8
		[]byte("a \n\t.,;{}0123456789"),
		[]byte("\xe2\x96\x91\xc3\xa9\xe6\x97\xa5 "), // ░, é, 日: whole and in pieces
	}
	for i := range 3000 {
		a := alphabets[i%len(alphabets)]
		b := make([]byte, 1+rng.IntN(64))
		for j := range b {
			b[j] = a[rng.IntN(len(a))]
		}
		if n := Count(string(b)); n > maxTokensPerByte*len(b) {
			t.Fatalf("%q: %d tokens in %d bytes", b, n, len(b))
		}
	}
}

var markerRE = regexp.MustCompile(`…(\d+) tokens truncated…`)

// checkCut checks a truncated Middle result against the text it came from.
func checkCut(t *testing.T, name, orig string, budget int, r Result) {
	t.Helper()
	if !r.Truncated || r.CutFrom < 0 || r.CutFrom >= r.CutTo || r.CutTo > int64(len(orig)) {
		t.Fatalf("%s, budget %d: %v [%d, %d) of %d bytes", name, budget, r.Truncated, r.CutFrom, r.CutTo, len(orig))
	}
	m := markerRE.FindAllStringSubmatch(r.Text, -1)
	if len(m) != 1 {
		t.Fatalf("%s, budget %d: %d markers in %q", name, budget, len(m), r.Text)
	}
	n, _ := strconv.Atoi(m[0][1])
	if want, _, _ := join(orig[:r.CutFrom], n, orig[r.CutTo:]); r.Text != want {
		t.Fatalf("%s, budget %d: text is not head + marker line + tail:\n%q\nwant\n%q", name, budget, r.Text, want)
	}
	if utf8.ValidString(orig) && !utf8.ValidString(r.Text) {
		t.Errorf("%s, budget %d: invalid UTF-8", name, budget)
	}
	for _, at := range []int64{r.CutFrom, r.CutTo} {
		if at > 0 && at < int64(len(orig)) {
			if !utf8.RuneStart(orig[at]) {
				t.Errorf("%s, budget %d: cut at %d splits a character", name, budget, at)
			}
			if orig[at-1] == '\r' && orig[at] == '\n' {
				t.Errorf("%s, budget %d: cut at %d splits CRLF", name, budget, at)
			}
		}
		for i := 0; i < len(orig); i++ {
			if orig[i] == esc {
				if end := escEnd(orig, i); int64(i) < at && (end < 0 || at < int64(end)) {
					t.Errorf("%s, budget %d: cut at %d splits the escape sequence %q", name, budget, at, orig[i:max(end, i+8)])
				}
			}
		}
	}
	if shown := Count(r.Text); shown > max(budget, markerTokens)+2 {
		t.Errorf("%s, budget %d: %d tokens shown", name, budget, shown)
	}
	if n, orig := r.OriginalTokens, countMemo(orig); n < orig*7/10 || n > orig*15/10 {
		t.Errorf("%s, budget %d: OriginalTokens %d, exact %d", name, budget, n, orig)
	}
}

var counted = map[string]int{}

func countMemo(s string) int {
	if n, ok := counted[s]; ok {
		return n
	}
	counted[s] = Count(s)
	return counted[s]
}

func TestMiddleSamples(t *testing.T) {
	for name, s := range samples(t) {
		for _, copies := range []int{1, 8} {
			orig := strings.Repeat(s, copies)
			for _, budget := range []int{1, 20, 100, 1000, 5000} {
				if budget >= countMemo(orig) {
					continue
				}
				r := Middle(orig, budget)
				checkCut(t, name, orig, budget, r)
				// Lines are short here: big enough cuts fall on line starts.
				if budget >= 200 && (orig[r.CutFrom-1] != '\n' || orig[r.CutTo-1] != '\n') {
					t.Errorf("%s, budget %d: cut [%d, %d) is not at line starts", name, budget, r.CutFrom, r.CutTo)
				}
				// And the budget is used, not wasted.
				if shown := Count(r.Text); budget >= 1000 && shown < budget*8/10 {
					t.Errorf("%s, budget %d: only %d tokens shown", name, budget, shown)
				}
			}
		}
	}
}

// Edge case 36: `python3 -c "print('é'*100000)"` with budgets 1..50.
func TestMiddleUTF8(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("é", 100000) + "\n",
		strings.Repeat("😀", 30000) + "\n",
		strings.Repeat(samples(t)["CJK, box, emoji"], 30),
	} {
		for budget := 1; budget <= 50; budget++ {
			r := Middle(s, budget)
			if !utf8.ValidString(r.Text) || !markerRE.MatchString(r.Text) {
				t.Fatalf("%q…, budget %d: %q", s[:8], budget, r.Text)
			}
			checkCut(t, "UTF-8", s, budget, r)
		}
	}
}

// Edge case 63: budgets 0, negative, huge.
func TestMiddleBudgets(t *testing.T) {
	big := strings.Repeat(samples(t)["ls -l"], 40) // ~170K tokens
	for _, budget := range []int{0, -1, math.MinInt} {
		checkCut(t, "ls -l", big, MinBudget, Middle(big, budget))
	}
	for _, budget := range []int{1e18, math.MaxInt} {
		if r := Middle(big, budget); r.Truncated || r.Text != big {
			t.Errorf("budget %d (clamped to %d): truncated", budget, MaxBudget)
		}
	}
}

// Cuts never split a character, CRLF or an escape sequence, even in text
// without a line break to cut at.
func TestCutsAreSafe(t *testing.T) {
	pieces := []string{"word ", "x", "42 ", "é", "€", "😀", "漢字", "\r\n", "\x1b[31m", "\x1b[0m",
		"\x1b[38;2;255;100;0m", "\x1b]0;a window title\x07", "\x1b]8;;https://example.com/x\x1b\\", "\x1b(B", "\x1b7"}
	r := rand.New(rand.NewPCG(7, 8))
	for range 10 {
		var b strings.Builder
		for b.Len() < 20000 {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		for budget := 12; budget < 3000; budget = budget*5/4 + 1 {
			checkCut(t, "mixed", s, budget, Middle(s, budget))
		}
	}
}

func TestHeadTailCutUnits(t *testing.T) {
	// A buffer that ends inside a character or an escape sequence is cut
	// before it when more text follows.
	for _, s := range []string{"abc\xe2\x82", "abc\x1b[3", "abc\x1b]0;tit", "abc\r"} {
		if got := headCut(s, 100, true); got != 3 {
			t.Errorf("headCut(%q) = %d, want 3", s, got)
		}
		if got := headCut(s, 100, false); got != len(s) {
			t.Errorf("headCut(%q, no more) = %d, want %d", s, got, len(s))
		}
	}
	// A ring that starts inside a character, or on the '\n' of a CRLF, is
	// cut after it.
	for _, s := range []string{"\x82\xacabc", "\nabc"} {
		if got := tailCut(s, 100); s[got:] != "abc" {
			t.Errorf("tailCut(%q) = %d", s, got)
		}
	}
}

// TestSetOriginal: a better count of the whole replaces the estimate, and the marker line
// then names that count minus what is shown, so the two never contradict each other.
func TestSetOriginal(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 20000; i++ {
		b.WriteString(strconv.Itoa(i) + "\n")
	}
	c := NewCollector(200)
	text := b.String()
	for i := 0; i < len(text); i += 4096 { // in chunks, so the middle is evicted
		j := min(i+4096, len(text))
		c.Write([]byte(text[i:j]), int64(i), int64(j))
	}
	r := c.Result()
	if !r.Truncated {
		t.Fatal("not truncated")
	}
	shown := Count(r.Text[:r.markAt]) + Count(r.Text[r.markEnd+1:])
	want := Count(text)
	r.SetOriginal(want)
	if r.OriginalTokens != want {
		t.Errorf("OriginalTokens %d, want %d", r.OriginalTokens, want)
	}
	m := regexp.MustCompile(`…(\d+) tokens truncated…`).FindStringSubmatch(r.Text)
	if m == nil {
		t.Fatalf("no marker in %q", r.Text)
	}
	cut, _ := strconv.Atoi(m[1])
	if cut != want-r.kept || cut+shown > want+8 || cut+shown < want-8 {
		t.Errorf("marker says %d cut; whole %d, shown %d (kept %d)", cut, want, shown, r.kept)
	}
	if strings.Count(r.Text, "tokens truncated") != 1 {
		t.Errorf("text %q", r.Text)
	}
	var nt Result
	nt.SetOriginal(5) // not truncated: unchanged
	if nt.OriginalTokens != 0 || nt.Text != "" {
		t.Errorf("untruncated result changed: %+v", nt)
	}
}
