package truncate

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCollector writes arbitrary text in arbitrary chunks for an arbitrary budget: the
// streaming Collector gives what Middle gives on the whole text, the result is valid
// UTF-8 when the text is, untruncated text comes back whole, and the cut raw range lies
// within what was written.
func FuzzCollector(f *testing.F) {
	f.Add("hello\nworld\n", uint16(1), uint64(3))
	f.Add(strings.Repeat("é€𝄞 line\n", 300), uint16(20), uint64(7))
	f.Add(strings.Repeat("x", 5000)+"\n"+strings.Repeat("  ", 900), uint16(5), uint64(11))
	f.Add("a\xffb\xe2\x82", uint16(0), uint64(1))
	f.Fuzz(func(t *testing.T, s string, budget uint16, seed uint64) {
		if len(s) > 16<<10 {
			return // exact token counts cost milliseconds per KiB: keep each run short
		}
		b := int(budget % 400)
		want := Middle(s, b)
		c := NewCollector(b)
		x := seed | 1
		for off := 0; off < len(s); {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			n := min(len(s)-off, 1+int(x%700))
			c.Write([]byte(s[off:off+n]), int64(off), int64(off+n))
			off += n
		}
		got := c.Result()
		if got.Text != want.Text || got.Truncated != want.Truncated || got.OriginalTokens != want.OriginalTokens {
			t.Fatalf("budget %d: Collector %+v\nMiddle %+v", b, short(got), short(want))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got.Text) {
			t.Fatalf("invalid UTF-8 out of valid input: %q", got.Text)
		}
		if !got.Truncated && got.Text != s {
			t.Fatalf("not truncated but changed: %q", got.Text)
		}
		if got.Truncated && (got.CutFrom < 0 || got.CutFrom >= got.CutTo || got.CutTo > int64(len(s))) {
			t.Fatalf("cut range [%d, %d) of %d bytes", got.CutFrom, got.CutTo, len(s))
		}
		if !got.Truncated && (got.CutFrom != 0 || got.CutTo != 0) {
			t.Fatalf("cut range [%d, %d) without truncation", got.CutFrom, got.CutTo)
		}
	})
}
