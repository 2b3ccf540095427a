package ptyhub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// blankRun matches two blank lines in a row in a text view.
var blankRun = regexp.MustCompile(`\n[ \t]*\n[ \t]*\n`)

// TestPromptToolkitTextView: a real prompt_toolkit prompt, which writes rows under
// itself that it reserves and moves the cursor back up over them at every redraw, reads
// as one line in the text view, with no blank run, at the prompt and after the answer
// ("PTK>", then "PTK> hello"), and so in read_output of the whole output; the lines
// printed between, blank ones too, are all there; and
// the truncated_range of a cut result over that output names exactly the cut text's raw
// bytes (read back, and nested reads shrink inside it).
func TestPromptToolkitTextView(t *testing.T) {
	t.Parallel()
	testtool.NeedPython(t, "prompt_toolkit")
	_, c := newClient(t, session.Options{})
	// The prompt reserves rows only when there are rows under it: at the top of the
	// screen, at the start and after clear. The lines between have blank lines printed
	// among them, which stay.
	script := `import os
from prompt_toolkit import prompt
a = prompt("PTK> ")
for i in range(600): print("between %d" % i if i % 5 else "")
os.system("clear")
b = prompt("PTK> ")
print("got", a, b)
`
	r := exec(t, c, session.ExecRequest{Argv: []string{"python3", "-c", script}, WaitFor: `^PTK>`, YieldTimeMs: new(int64(30000))})
	atPrompt := func(r *session.Result, what string) {
		t.Helper()
		if r.State == session.StateExited || !strings.Contains(r.Output, "PTK>") {
			t.Fatalf("%s: no prompt: %+v", what, r)
		}
		if m := blankRun.FindStringIndex(r.Output); m != nil {
			t.Errorf("%s: a blank run at %d in %q", what, m[0], r.Output[max(0, m[0]-40):min(len(r.Output), m[1]+40)])
		}
		if last := r.Output[strings.LastIndex(strings.TrimRight(r.Output, "\n"), "\n")+1:]; strings.TrimSpace(last) != "PTK>" {
			t.Errorf("%s: the last line is %q, not the prompt", what, last)
		}
	}
	atPrompt(r, "first prompt")
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "hello\r", WaitFor: `^PTK>`, YieldTimeMs: new(int64(30000))})
	atPrompt(r, "second prompt")
	// The answered prompt is one line: drawn anew on the row the agent read as "PTK>",
	// or continuing it.
	answered := func(out, answer, next string) {
		t.Helper()
		out = strings.TrimPrefix(out, "\n")
		if !strings.HasPrefix(out, "PTK> "+answer+"\n"+next) && !strings.HasPrefix(out, " "+answer+"\n"+next) || blankRun.MatchString(out) {
			t.Errorf("after the answer %q: %q", answer, out)
		}
	}
	answered(r.Output, "hello", "\nbetween 1\n")
	out, end := untilExit(t, c, write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "bye\r", YieldTimeMs: new(int64(30000))}))
	answered(out, "bye", "got hello bye\n")

	full := readRanges(t, c, end, []int64{60, 200, 700}, true)
	var want strings.Builder
	want.WriteString("PTK> hello\n")
	for i := range 600 {
		if i%5 != 0 {
			fmt.Fprintf(&want, "between %d", i)
		}
		want.WriteString("\n")
	}
	want.WriteString("PTK> bye\ngot hello bye\n")
	// A prompt's first drawing, which the agent read, may be a line of its own before
	// the answered one.
	if got := regexp.MustCompile(`(?m)^PTK>\n(PTK> )`).ReplaceAllString(full, "$1"); got != want.String() {
		t.Fatalf("read_output of the whole output:\n%s\nwant:\n%s", full, want.String())
	}
}

// readRanges reads the whole text view of an exited session, and checks that read_output
// cut to each budget names in truncated_range exactly the raw bytes of the cut text (read
// back, widened at most to whole lines) and, when nested, that reads of that range shrink
// inside it. It returns the whole text.
func readRanges(t *testing.T, c *session.Client, end *session.Result, budgets []int64, nested bool) string {
	t.Helper()
	read, whole := rangeReads(t, c, end.SessionID)
	full := whole(0, end.NextOffset)
	for _, budget := range budgets {
		rr := read(0, end.NextOffset, budget)
		if rr.TruncatedRange == nil {
			t.Fatalf("budget %d: not cut", budget)
		}
		name := fmt.Sprintf("budget %d", budget)
		checkCut(t, name, rr.Output, full, *rr.TruncatedRange, whole)
		if nested {
			checkNested(t, name, *rr.TruncatedRange, budget, read, whole)
		}
	}
	return full
}

// rangeReads returns read, read_output of session id's [from, to) at budget, and whole,
// the text of [from, to) read at a budget that must not cut it.
func rangeReads(t *testing.T, c *session.Client, id string) (read func(from, to, budget int64) *session.Result, whole func(from, to int64) string) {
	read = func(from, to, budget int64) *session.Result {
		rr, err := c.Read(context.Background(), session.ReadRequest{SessionID: id, From: &from, To: &to, MaxOutputTokens: &budget})
		if err != nil {
			t.Fatal(err)
		}
		return rr
	}
	whole = func(from, to int64) string {
		rr := read(from, to, 250000)
		if rr.TruncatedRange != nil {
			t.Fatalf("read [%d, %d) at the largest budget was cut", from, to)
		}
		return rr.Output
	}
	return read, whole
}

// checkNested checks that reads of the cut range rng at budget, and of the range each
// names in turn, name smaller ranges inside it whose cut text reads back exactly.
func checkNested(t *testing.T, name string, rng [2]int64, budget int64, read func(from, to, budget int64) *session.Result, whole func(from, to int64) string) {
	t.Helper()
	for depth := 0; depth < 8; depth++ {
		in := read(rng[0], rng[1], budget)
		if in.TruncatedRange == nil {
			return
		}
		ir := *in.TruncatedRange
		if ir[0] < rng[0] || ir[1] > rng[1] || ir[1]-ir[0] >= rng[1]-rng[0] {
			t.Fatalf("%s: nested read of %v reports %v: not a smaller range inside", name, rng, ir)
		}
		checkCut(t, fmt.Sprintf("%s, nested %d", name, depth), in.Output, whole(rng[0], rng[1]), ir, whole)
		rng = ir
	}
}

// TestVimTextView: vim writes a probe glyph (▽) at a cursor address, asks where the
// cursor went, and overwrites it at the same address at once; a human never reads it, and
// neither does the agent, at the start or in read_output of the whole session; the file's
// lines and vim's messages are there, and truncated_range over the session names the cut
// text's raw bytes.
func TestVimTextView(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "vim")
	_, c := newClient(t, session.Options{})
	file := filepath.Join(t.TempDir(), "short.txt")
	if err := os.WriteFile(file, []byte("alpha\nbeta\ngamma\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := exec(t, c, session.ExecRequest{Argv: []string{"vim", "-u", "DEFAULTS", "-i", "NONE", "-n", file}, WaitFor: `1,1 +All`, YieldTimeMs: new(int64(30000))})
	if r.State == session.StateExited || !strings.Contains(r.Output, "alpha") || strings.Contains(r.Output, "\u25bd") {
		t.Fatalf("vim's first screen: %+v", r)
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "ohello\x1b", WaitFor: `2,5 +All`, YieldTimeMs: new(int64(30000))})
	out, end := untilExit(t, c, write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: ":wq\r", YieldTimeMs: new(int64(30000))}))
	if b, _ := os.ReadFile(file); string(b) != "alpha\nhello\nbeta\ngamma\n" {
		t.Fatalf("vim wrote %q (output %q)", b, out)
	}
	// vim's rows run together in a few long lines, each from many raw bytes: cut ranges
	// widen to them, so nested reads need not shrink.
	full := readRanges(t, c, end, []int64{25, 50}, false) // both under the ~100 tokens of the text view, however vim drew
	if strings.Contains(full, "\u25bd") || !strings.Contains(full, "hello") || !strings.Contains(full, "23B written") {
		t.Errorf("the text view of the session:\n%s", full)
	}
}
