package termtext

import (
	"testing"
)

// FuzzSplit checks that the text does not depend on where the input was cut
// into reads (EDGE 39), and that it is always valid UTF-8 without control
// characters other than "\n" and "\t".
func FuzzSplit(f *testing.F) {
	for _, tc := range convertTests {
		if len(tc.raw) < 4096 {
			f.Add([]byte(tc.raw), uint64(len(tc.raw)/2))
		}
	}
	for _, s := range []string{
		"\x1b[3", "1m", "\x1b]0;\x1b", "\x1bP\x1b\x1b\\", "\r\r\n\r", "\xe2\x82\xac\xe2",
		"\x1b[?2004h\x1b[?2004l\r", "ab\b \b\x1b[K\x1b[2K\x1b[5G\x1b[3@\x1b[2P\x1b[9X",
		"\x1b7\x1b[s\x1b8\x1b[u", "\x00\x18\x1a\x7f\x9b\xc2\x9b", "\xf0\x9f\x98\x80\xed\xa0\x80",
	} {
		f.Add([]byte(s), uint64(0x9e3779b97f4a7c15))
	}
	f.Fuzz(func(t *testing.T, raw []byte, seed uint64) {
		want := String(raw)
		checkText(t, raw, want)

		// Every single split point (bounded, so a run stays fast).
		if len(raw) <= 256 {
			for i := 0; i <= len(raw); i++ {
				var c Converter
				out := c.Write(nil, raw[:i])
				if got := string(c.Close(c.Write(out, raw[i:]))); got != want {
					t.Fatalf("split at %d of %q\n got %q\nwant %q", i, raw, got, want)
				}
			}
		}

		// Many split points chosen by the seed, with Pending between them
		// (Pending must not change anything). Pending costs up to a line (4096
		// cells), so it is looked at a bounded number of times: unbounded, a long
		// input made each run quadratic and the fuzzer crawl.
		var c Converter
		var out []byte
		x := seed | 1
		pendings := 0
		for i := 0; i < len(raw); {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			n := min(int(x%9), len(raw)-i)
			out = c.Write(out, raw[i:i+n])
			if x&(1<<40) != 0 && pendings < 64 {
				pendings++
				checkText(t, raw, string(c.Pending()))
			}
			i += n
		}
		if got := string(c.Close(out)); got != want {
			t.Fatalf("seeded split of %q\n got %q\nwant %q", raw, got, want)
		}

		// With Flush between reads the text may differ (a rewritten line
		// is shown again), but it stays valid.
		// (Bounded: each Flush may repeat a whole rewritten line.)
		var d Converter
		var fl []byte
		for i := 0; i < min(len(raw), 4096); i += 7 {
			fl = d.Write(fl, raw[i:min(i+7, len(raw), 4096)])
			fl = d.Flush(fl)
		}
		checkText(t, raw, string(d.Close(fl)))
	})
}
