package transcript

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// appendJSONString gives a JSON string that decodes to the input, with one U+FFFD for
// each byte that is not part of valid UTF-8, for any mix of plain runs (taken eight
// bytes at a time), escapes, multi-byte characters and invalid bytes, at any alignment;
// it says whether there was an invalid byte, and decodeBody gives back the input
// exactly, but for each invalid byte one 0xFF (a U+FFFD printed stays itself).
func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "plain text ", "\"", "\\", "\n", "\r\n", "\t", "\x00", "\x1b[31m", "\x7f",
		"é", "日本", "😀", "\xff", "\xe2\x82", "\xc3", "\ufffd", strings.Repeat("x", 17)}
	for range 5000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		in := []byte(b.String())
		var want strings.Builder
		var exact []byte
		bad := false
		for p := in; len(p) > 0; {
			c, size := utf8.DecodeRune(p)
			want.WriteRune(c) // RuneError (U+FFFD) for an invalid byte, size 1
			if c == utf8.RuneError && size == 1 {
				exact, bad = append(exact, 0xFF), true
			} else {
				exact = append(exact, p[:size]...)
			}
			p = p[size:]
		}
		out, invalid := appendJSONString(nil, nil, in)
		if invalid != bad {
			t.Fatalf("%q: invalid = %v", in, invalid)
		}
		if back, ok := decodeBody(nil, out[1:len(out)-1], -1); !ok || !bytes.Equal(back, exact) {
			t.Fatalf("%q → %s decodes back to %q (%v), want %q", in, out, back, ok, exact)
		}
		var got string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q → %s: not JSON: %v", in, out, err)
		}
		if got != want.String() {
			t.Fatalf("%q → %s decodes to %q, want %q", in, out, got, want.String())
		}
		if !utf8.Valid(out) {
			t.Fatalf("%q → invalid UTF-8 %q", in, out)
		}
	}
}

func BenchmarkAppendJSONString(b *testing.B) {
	flood := []byte(strings.Repeat("a", 64<<10))
	b.SetBytes(int64(len(flood)))
	dst := make([]byte, 0, 2*len(flood))
	for b.Loop() {
		dst, _ = appendJSONString(dst[:0], nil, flood)
	}
}

// plainRun, which tests 32 and eight bytes at a time, stops where a byte-at-a-time scan does:
// for every byte value at every position of a plain run, at every alignment (and every
// place in a block of four words), and for two such bytes at once (the borrows of one
// must not hide or move the other).
func TestPlainRunExact(t *testing.T) {
	t.Parallel()
	plain := func(b byte) bool { return b >= 0x20 && b < utf8.RuneSelf && b != '"' && b != '\\' }
	slow := func(p []byte, i int) int {
		for i < len(p) && plain(p[i]) {
			i++
		}
		return i
	}
	buf := []byte(strings.Repeat("ab ~}!", 8))[:40]
	// The values next to the edges of what a plain run holds, paired with a second byte.
	edges := []byte{0x00, 0x1f, 0x20, 0x21, '"', 0x23, 0x5b, '\\', 0x5d, 0x7e, 0x7f, 0x80, 0xa2, 0xdc, 0xfe, 0xff}
	check := func(p []byte) {
		for from := 0; from <= len(p); from++ {
			if got, want := plainRun(p, from), slow(p, from); got != want {
				t.Fatalf("plainRun(%q, %d) = %d, want %d", p, from, got, want)
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
			for _, w := range []byte{0x00, 0x1f, '"', '\\', 0x7f, 0x80, 0xff, ' ', '#', '[', ']'} {
				for d := 1; d < 9 && at+d < len(p); d++ {
					q := bytes.Clone(p)
					q[at+d] = w
					check(q)
				}
			}
		}
	}
}
