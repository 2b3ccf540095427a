package termtext

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// benchInputs are about 1 MiB each.
var benchInputs = []struct {
	name string
	raw  []byte
}{
	{"plain", repeatTo(func(i int) string {
		return fmt.Sprintf("%6d  drwxr-xr-x  2 user group  4096 Jan  1 12:00 some/file/name_%d.go\r\n", i, i)
	})},
	{"ansi", repeatTo(func(i int) string {
		// ls --color, grep --color, compiler diagnostics, prompts.
		return fmt.Sprintf("\x1b[0m\x1b[01;34mdir_%d\x1b[0m  \x1b[01;32mexec\x1b[0m  "+
			"src/main.go:%d:\x1b[1;31merror:\x1b[0m \x1b[38;2;255;128;0mbad\x1b[39m \x1b[4:3mthing\x1b[m\r\n"+
			"\x1b]0;user@host: ~\a\x1b[?2004h$ \x1b[?2004l\r\n", i, i)
	})},
	{"progress", repeatTo(func(i int) string {
		return fmt.Sprintf("\r\x1b[K[%-20s] %3d%%", strings.Repeat("=", i%21), i%101)
	})},
	{"utf8", repeatTo(func(i int) string {
		return fmt.Sprintf("%d: héllo wörld — ünïcödé “quotes” € 日本語テキスト 😀\r\n", i)
	})},
	{"osc", append(append([]byte("\x1b]0;"), bytes.Repeat([]byte("x"), 1<<20)...), '\a')},
	// A flood without newlines (head -c N /dev/zero | tr '\0' a).
	{"flood", bytes.Repeat([]byte("a"), 1<<20)},
}

func repeatTo(f func(int) string) []byte {
	var b []byte
	for i := 0; len(b) < 1<<20; i++ {
		b = append(b, f(i)...)
	}
	return b
}

func BenchmarkWrite(b *testing.B) {
	for _, in := range benchInputs {
		b.Run(in.name, func(b *testing.B) {
			var c Converter
			dst := make([]byte, 0, 2*len(in.raw))
			b.SetBytes(int64(len(in.raw)))
			b.ReportAllocs()
			for b.Loop() {
				// 4 KiB reads, as from a pty (64 KiB, as the recorder's, for the flood).
				dst = dst[:0]
				step := 4096
				if in.name == "flood" {
					step = 64 << 10
				}
				for i := 0; i < len(in.raw); i += step {
					dst = c.Write(dst, in.raw[i:min(i+step, len(in.raw))])
				}
				dst = c.Flush(dst)
			}
		})
	}
}

// BenchmarkWriteWorstCase measures inputs crafted to make each escape
// sequence touch as many cells as possible (the worst case is bounded by
// maxLine cells per sequence).
func BenchmarkWriteWorstCase(b *testing.B) {
	long := fmt.Sprintf("\x1b[%dGx", maxLine)
	inputs := []struct {
		name string
		raw  []byte
	}{
		{"insert", []byte(long + "\r" + strings.Repeat("\x1b[@\x1b[P", 1<<17))},
		{"pad", bytes.Repeat([]byte("\x1b[2K"+long), 1<<16)},
		{"erase1", []byte(long + strings.Repeat("\x1b[1K", 1<<17))},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			var c Converter
			dst := make([]byte, 0, 2*len(in.raw))
			b.SetBytes(int64(len(in.raw)))
			for b.Loop() {
				dst = c.Flush(c.Write(dst[:0], in.raw))
			}
		})
	}
}
