package termtext

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// printableRun, which tests 32 and eight bytes at a time, stops where a byte-at-a-time scan
// does: for every byte value at every position of a printable run, at every alignment
// (and every place in a block of four words), alone and with a second such byte after it
// (the borrows of one must not hide the other).
func TestPrintableRunExact(t *testing.T) {
	t.Parallel()
	slow := func(p []byte, i int) int {
		for i < len(p) && p[i] >= 0x20 && p[i] < 0x7f {
			i++
		}
		return i
	}
	buf := []byte(strings.Repeat("ab ~}!", 8))[:40]
	// The values next to the edges of printable ASCII, paired with a second byte.
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, 0x7e, 0x7f, 0x80, 0x81, 0xdf, 0xe0, 0xfe, 0xff}
	check := func(p []byte) {
		for from := 0; from <= len(p); from++ {
			for _, lim := range []int{(from + len(p)) / 2, len(p)} {
				if got, want := printableRun(p, from, lim), slow(p[:lim], from); got != want {
					t.Fatalf("printableRun(%q, %d, %d) = %d, want %d", p, from, lim, got, want)
				}
			}
		}
	}
	for v := range 256 {
		for at := range len(buf) {
			p := bytes.Clone(buf)
			p[at] = byte(v)
			check(p)
			if at >= 24 || bytes.IndexByte(edges, byte(v)) < 0 {
				continue
			}
			for _, w := range []byte{0x00, 0x1f, 0x7f, 0x80, 0xff} {
				for d := 1; d < 9 && at+d < len(p); d++ {
					q := bytes.Clone(p)
					q[at+d] = w
					check(q)
				}
			}
		}
	}
}

// fastPathInputs are inputs that take the converter's fast paths (a plain line copied
// as it is, a run kept as bytes in the tail, a long line emitted a line's length at a
// time, a whole character decoded at once) in and out of every state that turns them
// off: escapes, "\r" and "\r\n", blank and space-only lines, concealed text, the DEC
// graphics set, a redraw of the last line's row, invalid and cut UTF-8, and lines of
// about maxLine (4096) runes and far longer.
func fastPathInputs(t *testing.T) map[string][]byte {
	long := strings.Repeat("0123456789", 1000)
	in := map[string][]byte{
		"plain lines":  []byte("hello world\r\nsecond line\nthird\r\n\r\n\nlast without newline"),
		"flood":        bytes.Repeat([]byte("a"), 3*maxLine+17),
		"long lines":   []byte(long + "\r\n" + long[:maxLine] + "\n" + long[:maxLine-1] + "\r\n" + long[:maxLine+1] + "\n" + long + "tail"),
		"spaces":       []byte("    \r\n" + strings.Repeat(" ", maxLine+3) + "\nx   \r\n   y\n\n\n  \r\nz"),
		"cr overwrite": []byte("progress 10%\rprogress 20%\rprogress 100%\r\nabc\rx\r\nlong" + long + "\rshort\r\n"),
		"escapes": []byte("\x1b[1mbold\x1b[0m plain \x1b[31mred\x1b[m\r\n\x1b]0;title\x07after osc\n" +
			"ab\x1b[2Dcd\x1b[K\r\n\x1b[3Gmid\x1b[2K\r\n\x1b[A\x1b[Bplain\x1b[5@x\x1b[2Pz\r\n\x1b7save\x1b8restore\n"),
		"conceal":      []byte("user: \x1b[8msecret password\x1b[28m shown\r\n\x1b[8m" + long + "\x1b[0m\n"),
		"graphics":     []byte("\x1b(0lqqqk\x1b(B text \x0ex\x0f after\r\nplain ` { | } ~ after\n"),
		"redraw":       []byte("$ prompt line\r\n\x1b[Aprompt line again\r\n\x1b[1A$ prompt line\r\nnext\n"),
		"utf8":         []byte("héllo wörld — “quotes” € 日本語 😀\r\n" + strings.Repeat("é€日😀", 2000) + "\n"),
		"invalid utf8": []byte("a\xffb\xc3(c\xe2\x82d\xed\xa0\x80e\xf4\x90\x80\x80f\x80\x80g\xc0\xafh\xf8i\r\n\xe2\x82\xac ok\n"),
		"controls":     []byte("tab\there\x00nul\x7fdel\bback\x0bvt\x0cff\x18can\x1asub\x9bcsi\r\n"),
		"in plain runs": []byte("0123456789abcdef\x7f0123456789abcdef\r\nabcdefghijk\x1fmnopqrstuvwxyz\n" +
			"0123456789ab\xc3\xa9cdef0123456789\xffabcdef\r\n" + long[:maxLine-5] + "\x7f" + long[:100] + "\r\n"),
		"blank then up": []byte("line one\r\n\r\n\r\n\x1b[2Aover\r\n\x1b[10Bdown\r\n"),
	}
	var mix []byte
	r := rand.New(rand.NewPCG(11, 12))
	pieces := [][]byte{[]byte("plain "), []byte("\r\n"), []byte("\n"), []byte("\r"), []byte("\x1b[31m"), []byte("\x1b[0m"),
		[]byte("\x1b[8m"), []byte("\x1b[28m"), []byte("\x1b(0"), []byte("\x1b(B"), []byte("\x1b[A"), []byte("\x1b[K"), []byte("\x1b[3G"),
		[]byte("é"), []byte("😀"), []byte("\xff"), []byte("\xe2\x82"), []byte("  "), []byte("\x7f"), []byte("\x00"), []byte(long[:r.IntN(len(long))])}
	for len(mix) < 128<<10 {
		mix = append(mix, pieces[r.IntN(len(pieces))]...)
	}
	in["random mix"] = mix
	// The recordings of real tools of the corpus.
	raws, _ := filepath.Glob(filepath.Join("..", "testdata", "corpus", "*", "*.raw"))
	if len(raws) == 0 {
		t.Fatal("no corpus under ../testdata/corpus")
	}
	for _, p := range raws {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		in[filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p)] = b
	}
	return in
}

// The converter's fast paths give what the cells give, byte for byte, call for call: the
// text each Write appends (the text log is the concatenation, so it is the same file),
// the blank lines each call released, what is pending after it, and the text Close
// appends; for every input above, cut into reads every way (at every point of a short
// input, one byte at a time, in chunks of random sizes, and cut inside every multi-byte
// character).
func TestFastPathsGiveCellsText(t *testing.T) {
	t.Parallel()
	for name, raw := range fastPathInputs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for desc, chunks := range cuts(raw) {
				fast, cells := Converter{}, Converter{cellsOnly: true}
				var a, b []byte
				for k, ch := range chunks {
					a, b = fast.Write(a[:0], ch), cells.Write(b[:0], ch)
					if !bytes.Equal(a, b) {
						t.Fatalf("%s, read %d (%q): fast paths wrote\n%q\nthe cells\n%q", desc, k, clip(ch), clip(a), clip(b))
					}
					if fr, cr := fmt.Sprint(fast.Released()), fmt.Sprint(cells.Released()); fr != cr {
						t.Fatalf("%s, read %d: fast paths released %s, the cells %s", desc, k, fr, cr)
					}
					if len(chunks) < 64 || k%97 == 0 {
						if fp, cp := fast.Pending(), cells.Pending(); !bytes.Equal(fp, cp) {
							t.Fatalf("%s, after read %d: fast paths pending %q, the cells %q", desc, k, clip(fp), clip(cp))
						}
					}
				}
				if a, b = fast.Close(a[:0]), cells.Close(b[:0]); !bytes.Equal(a, b) {
					t.Fatalf("%s, Close: fast paths wrote\n%q\nthe cells\n%q", desc, clip(a), clip(b))
				}
			}
		})
	}
}

// cuts returns raw cut into reads in several ways, by description.
func cuts(raw []byte) map[string][][]byte {
	out := map[string][][]byte{"whole": {raw}}
	if len(raw) <= 600 {
		for i := 1; i < len(raw); i++ {
			out[fmt.Sprintf("split at %d", i)] = [][]byte{raw[:i], raw[i:]}
		}
	}
	if len(raw) <= 64<<10 {
		ones := make([][]byte, len(raw))
		for i := range raw {
			ones[i] = raw[i : i+1]
		}
		out["1-byte reads"] = ones
	}
	// Cut inside each multi-byte character (after its first byte), in one list of reads.
	var mid [][]byte
	last := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] >= 0xc0 && i+1 < len(raw) {
			mid = append(mid, raw[last:i+1])
			last = i + 1
		}
	}
	out["cut inside characters"] = append(mid, raw[last:])
	seed := binary.LittleEndian.Uint64(append(raw[:min(len(raw), 8):min(len(raw), 8)], make([]byte, 8)...))
	rng := rand.New(rand.NewPCG(seed, uint64(len(raw))))
	for k := range 6 {
		var chunks [][]byte
		for rest := raw; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN([]int{7, 100, 4095, 4097, 9000, 64 << 10}[k]))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		out[fmt.Sprintf("random reads #%d", k)] = chunks
	}
	return out
}

func clip(b []byte) []byte {
	if len(b) > 300 {
		return append(append(b[:150:150], "…"...), b[len(b)-150:]...)
	}
	return b
}
