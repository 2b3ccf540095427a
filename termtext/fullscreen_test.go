package termtext_test

import (
	"os"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/termtext"
)

// testdata/fullscreen holds the raw output of real programs that move the cursor up and
// down, recorded through ptyhub on a 24×80 terminal that answered their queries:
// prompt_toolkit.raw is python3 -c "from prompt_toolkit import prompt; print('got',
// prompt('> '))" (Debian's prompt_toolkit 3.0.36), answered "hello" and Enter. Each
// redraw of the prompt writes 22 rows of "\r\r\n" under it (rows it reserves) and moves
// the cursor back up over them. vim.raw is vim -u DEFAULTS -i NONE -n on a file of three
// lines (alpha, beta, gamma), typed "ohello", Escape, ":wq" and Enter: it writes its
// ambiguous-width probe ▽ at a cursor address, asks for the cursor's position, and
// overwrites the glyph with spaces at the same address.
const fullscreenDir = "../testdata/fullscreen"

// TestFullScreenRecordings replays the recordings, whole and cut into reads every way:
// the text is what a human saw, with no blank line from the reserved rows and no probe
// glyph, and the same for every chunking.
func TestFullScreenRecordings(t *testing.T) {
	cases := []struct {
		file  string
		check func(text string) bool
	}{
		{"prompt_toolkit.raw", func(text string) bool { return text == ">\n> hello\ngot hello\n" }},
		{"vim.raw", func(text string) bool {
			return !strings.Contains(text, "\u25bd") && strings.HasPrefix(text, "\"short.txt\" 3L, 17B ") &&
				strings.Contains(text, "alpha") && strings.Contains(text, "hello") &&
				strings.Contains(text, "\"short.txt\" 4L, 23B written") && !strings.Contains(text, "\n\n")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(fullscreenDir + "/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			want := termtext.String(raw)
			if !tc.check(want) {
				t.Fatalf("text %q", want)
			}
			chunkings(raw, func(desc string, chunks [][]byte) {
				if got := convertChunks(chunks); got != want {
					t.Fatalf("%s: text %q, want %q", desc, got, want)
				}
			})
		})
	}
}

// TestReleased: a blank line held back is emitted with the raw line it came from. Over
// inputs with printed blank lines, reserved rows that the cursor goes back over and the
// prompt_toolkit recording, under every chunking, with Flush between reads: the text is
// the same as the whole input's, every "\n" that Released names is the first bytes of its
// call's text, and its raw line, converted on its own, reads as one blank line; the lines
// named are in order and do not overlap.
func TestReleased(t *testing.T) {
	ptk, err := os.ReadFile(fullscreenDir + "/prompt_toolkit.raw")
	if err != nil {
		t.Fatal(err)
	}
	inputs := [][]byte{
		[]byte("a\n\n\nb\n"),
		[]byte("a\r\n\r\n   \r\n\x1b[0m\r\nb\r\n\r\n"),
		[]byte("> \r\n\r\n\r\n\x1b[3A\x1b[2Chello\r\n\n\nok\n"),
		[]byte("x\n\n\x0b\x1bE\n\x1b[2J\x1b[Hy\n\n\nz"),
		ptk,
	}
	for _, raw := range inputs {
		want := termtext.String(raw)
		for _, flush := range []bool{false, true} {
			chunkings(raw, func(desc string, chunks [][]byte) {
				var c termtext.Converter
				var text []byte
				var pos, last int64
				check := func(out []byte) {
					rel := c.Released()
					if len(out) < len(rel) || strings.Count(string(out[:len(rel)]), "\n") != len(rel) {
						t.Fatalf("%q, %s: text %q does not start with the %d blank lines released", raw, desc, out, len(rel))
					}
					for _, r := range rel {
						from, to := pos-r[0], pos-r[1]
						if from < last || to <= from || to > int64(len(raw)) {
							t.Fatalf("%q, %s: released line [%d, %d) after %d", raw, desc, from, to, last)
						}
						if got := termtext.String(raw[from:to]); got != "\n" {
							t.Fatalf("%q, %s: released line [%d, %d) %q reads %q, not one blank line", raw, desc, from, to, raw[from:to], got)
						}
						last = to
					}
					text = append(text, out...)
				}
				for _, ch := range chunks {
					pos += int64(len(ch))
					check(c.Write(nil, ch))
					if flush {
						check(c.Flush(nil))
					}
				}
				check(c.Close(nil))
				if !flush && string(text) != want {
					t.Fatalf("%q, %s: text %q, want %q", raw, desc, text, want)
				}
			})
		}
	}
}
