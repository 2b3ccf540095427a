package termtext_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/termtext"
	"github.com/ptyhub/ptyhub/truncate"
)

// The corpus (testdata/corpus at the repository's root) holds the raw output of real
// tools with progress bars, spinners and colour, recorded by termtext/internal/record:
// per tool, tty.raw (a 24×80 terminal under the agent profile: TERM=xterm-256color,
// NO_COLOR=1, CARGO_TERM_PROGRESS_WHEN=never), tty-color.raw (TERM=xterm-256color
// alone), tty-nocolor.raw (TERM=xterm-256color NO_COLOR=1, the profile before cargo's
// bar was turned off), pipe.raw (a pipe, TERM=dumb NO_COLOR=1),
// each with its exit code, and a hand-written facts file: what an agent needs from the
// output, one check a line:
//
//	exit N        the exit code of every recording
//	bars          the tool draws bars, spinners or colour on a terminal
//	line: TEXT    a line of the text view is exactly TEXT
//	re: REGEXP    a line of the text view matches REGEXP (^ and $ are the line's ends)
//	never: TEXT   no line contains TEXT (a frame of a bar or spinner)
//	once: TEXT    at most one line contains TEXT (the final frame of a bar)
//	extra: TEXT   lines starting with TEXT are printed on a terminal only (not counted
//	              when the terminal's tokens are held against the pipe's)
//
// Lines are compared without trailing spaces.
const corpusDir = "../testdata/corpus"

type facts struct {
	exit  int
	bars  bool
	lines []string
	res   []*regexp.Regexp
	never []string
	once  []string
	extra []string
}

func (f *facts) count() int { return len(f.lines) + len(f.res) }

type corpusTool struct {
	name  string
	facts facts
	raw   map[string][]byte // by mode: corpusModes
	exit  map[string]int
}

var corpusModes = []string{"tty", "tty-color", "tty-nocolor", "pipe"}

func loadCorpus(t testing.TB) []corpusTool {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(corpusDir, "*", "facts"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus under %s (%v)", corpusDir, err)
	}
	var tools []corpusTool
	for _, fp := range dirs {
		dir := filepath.Dir(fp)
		ct := corpusTool{name: filepath.Base(dir), raw: map[string][]byte{}, exit: map[string]int{}}
		ct.facts = readFacts(t, fp)
		for _, m := range corpusModes {
			raw, err := os.ReadFile(filepath.Join(dir, m+".raw"))
			if err != nil {
				t.Fatal(err)
			}
			ct.raw[m] = raw
			b, err := os.ReadFile(filepath.Join(dir, m+".exit"))
			if err != nil {
				t.Fatal(err)
			}
			if ct.exit[m], err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatalf("%s/%s.exit: %v", dir, m, err)
			}
		}
		tools = append(tools, ct)
	}
	return tools
}

func readFacts(t testing.TB, path string) facts {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fs facts
	fs.exit = -1
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		key, val, _ := strings.Cut(l, ": ")
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case l == "bars":
			fs.bars = true
		case strings.HasPrefix(l, "exit "):
			fs.exit, err = strconv.Atoi(strings.TrimPrefix(l, "exit "))
		case key == "line":
			fs.lines = append(fs.lines, val)
		case key == "re":
			var re *regexp.Regexp
			if re, err = regexp.Compile("^(?:" + val + ")$"); err == nil {
				fs.res = append(fs.res, re)
			}
		case key == "never":
			fs.never = append(fs.never, val)
		case key == "once":
			fs.once = append(fs.once, val)
		case key == "extra":
			fs.extra = append(fs.extra, val)
		default:
			err = fmt.Errorf("unknown check %q", l)
		}
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
	}
	if fs.exit < 0 || fs.count() == 0 {
		t.Fatalf("%s: needs an exit line and at least one fact", path)
	}
	return fs
}

// escapeFragment matches what is left of an escape sequence whose ESC was lost:
// "[0m", "[2K", "[?25l", "]0;title".
var escapeFragment = regexp.MustCompile(`\[\??[0-9;]*[mKJHhlABCDGX]|\][0-9]+;`)

// kept returns how many of f's facts the text keeps, and a description of each one
// it lost.
func (f *facts) kept(text string) (int, []string) {
	lines := strings.Split(text, "\n")
	has := func(ok func(string) bool) bool {
		for _, l := range lines {
			if ok(strings.TrimRight(l, " ")) {
				return true
			}
		}
		return false
	}
	n := 0
	var lost []string
	for _, want := range f.lines {
		if has(func(l string) bool { return l == want }) {
			n++
		} else {
			lost = append(lost, fmt.Sprintf("no line %q", want))
		}
	}
	for _, re := range f.res {
		if has(re.MatchString) {
			n++
		} else {
			lost = append(lost, fmt.Sprintf("no line matches %s", re))
		}
	}
	return n, lost
}

// extraLines returns the lines of text that f says only a terminal gets.
func (f *facts) extraLines(text string) string {
	var b strings.Builder
	for l := range strings.Lines(text) {
		for _, p := range f.extra {
			if strings.HasPrefix(l, p) {
				b.WriteString(l)
				break
			}
		}
	}
	return b.String()
}

// problems lists what must not be in the text view: escape fragments, spinner frames,
// frames of bars (never:, once:) and a line repeated right after itself.
func (f *facts) problems(text string) []string {
	var p []string
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if m := escapeFragment.FindString(l); m != "" {
			p = append(p, fmt.Sprintf("escape fragment %q in line %q", m, l))
		}
		if strings.ContainsFunc(l, func(r rune) bool { return r >= 0x2800 && r <= 0x28ff }) {
			p = append(p, fmt.Sprintf("spinner frame in line %q", l))
		}
		for _, s := range f.never {
			if strings.Contains(l, s) {
				p = append(p, fmt.Sprintf("frame %q in line %q", s, l))
			}
		}
		if i > 0 && l != "" && strings.TrimSpace(l) != "|" && l == lines[i-1] {
			p = append(p, fmt.Sprintf("line %q twice in a row", l))
		}
	}
	for _, s := range f.once {
		if n := strings.Count(text, s); n > 1 {
			p = append(p, fmt.Sprintf("%q in %d lines (a bar's frames)", s, n))
		}
	}
	return p
}

// convertChunks returns the text of chunks written in turn to one new Converter,
// closed at the end.
func convertChunks(chunks [][]byte) string {
	var c termtext.Converter
	var out []byte
	for _, ch := range chunks {
		out = c.Write(out, ch)
	}
	return string(c.Close(out))
}

// chunkings calls f with raw cut into reads in many ways: at every single split point
// when raw is small, else one byte at a time and at random points.
func chunkings(raw []byte, f func(desc string, chunks [][]byte)) {
	if len(raw) <= 2<<10 {
		for i := 0; i <= len(raw); i++ {
			f(fmt.Sprintf("split at %d", i), [][]byte{raw[:i], raw[i:]})
		}
	} else {
		for _, i := range []int{0, len(raw) / 3, len(raw) / 2, len(raw) - 1} {
			f(fmt.Sprintf("split at %d", i), [][]byte{raw[:i], raw[i:]})
		}
	}
	ones := make([][]byte, len(raw))
	for i := range raw {
		ones[i] = raw[i : i+1]
	}
	f("1-byte reads", ones)
	rng := rand.New(rand.NewPCG(1, uint64(len(raw))))
	for k := range 20 {
		var chunks [][]byte
		for rest := raw; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(4096>>(k%8)))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		f(fmt.Sprintf("random reads #%d", k), chunks)
	}
}

// TestCorpus replays every recording of the corpus through the text view, whole and
// cut into reads every way, and checks that each gives the same text, that the
// agent-profile terminal (tty) and the pipe keep every fact, with nothing of an escape
// sequence, a spinner or a bar's earlier frames, and that the terminal's text never
// costs more tokens than the pipe's raw output (nor, for tools that draw, more than half
// of the terminal's raw bytes').
func TestCorpus(t *testing.T) {
	for _, ct := range loadCorpus(t) {
		t.Run(ct.name, func(t *testing.T) {
			t.Parallel()
			text := map[string]string{}
			for _, m := range corpusModes {
				if ct.exit[m] != ct.facts.exit {
					t.Errorf("%s: exit code %d, facts say %d", m, ct.exit[m], ct.facts.exit)
				}
				raw := ct.raw[m]
				want := termtext.String(raw)
				text[m] = want
				chunkings(raw, func(desc string, chunks [][]byte) {
					if got := convertChunks(chunks); got != want {
						t.Fatalf("%s, %s: text differs from the whole input's\n got %q\nwant %q", m, desc, got, want)
					}
				})
			}
			for _, m := range []string{"tty", "pipe"} {
				if _, lost := ct.facts.kept(text[m]); len(lost) > 0 {
					t.Errorf("%s lost facts:\n\t%s\ntext:\n%s", m, strings.Join(lost, "\n\t"), text[m])
				}
				if p := ct.facts.problems(text[m]); len(p) > 0 {
					t.Errorf("%s:\n\t%s\ntext:\n%s", m, strings.Join(p, "\n\t"), text[m])
				}
			}
			// The pipe's output as an agent on a pipe gets it: the bytes as they are.
			tty, pipe, raw := truncate.Count(text["tty"]), truncate.Count(string(ct.raw["pipe"])), truncate.Count(string(ct.raw["tty"]))
			if extra := truncate.Count(ct.facts.extraLines(text["tty"])); tty-extra > pipe {
				t.Errorf("the terminal's text view costs %d tokens (%d of them in lines only a terminal gets), the pipe's raw output %d", tty, extra, pipe)
			}
			if ct.facts.bars && 2*tty > raw {
				t.Errorf("the terminal's text view costs %d tokens, more than half of its raw bytes' %d", tty, raw)
			}
		})
	}
}

// BenchmarkCorpusTokens prints, per tool of the corpus, the o200k tokens of the text
// view of each recording against its raw bytes and against the pipe, and how many of
// the tool's facts each keeps. Run: go test -run '^$' -bench CorpusTokens -benchtime 1x ./termtext
func BenchmarkCorpusTokens(b *testing.B) {
	tools := loadCorpus(b)
	var sb strings.Builder
	sb.WriteString("\n| tool | raw tty | text tty | raw pipe | text pipe | tty / raw pipe | tty / raw tty | facts tty | text tty-color | facts tty-color | text tty-nocolor | facts tty-nocolor | facts pipe |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	type row struct{ rawTTY, rawPipe, tty, color, nocolor, pipe, kTTY, kColor, kNocolor, kPipe, facts int }
	var sum row
	for _, ct := range tools {
		var r row
		count := func(m string) (int, int) {
			txt := termtext.String(ct.raw[m])
			k, _ := ct.facts.kept(txt)
			return truncate.Count(txt), k
		}
		r.rawTTY, r.rawPipe = truncate.Count(string(ct.raw["tty"])), truncate.Count(string(ct.raw["pipe"]))
		r.tty, r.kTTY = count("tty")
		r.color, r.kColor = count("tty-color")
		r.nocolor, r.kNocolor = count("tty-nocolor")
		r.pipe, r.kPipe = count("pipe")
		r.facts = ct.facts.count()
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %d | %.2f | %.2f | %d/%d | %d | %d/%d | %d | %d/%d | %d/%d |\n", ct.name,
			r.rawTTY, r.tty, r.rawPipe, r.pipe, float64(r.tty)/float64(r.rawPipe), float64(r.tty)/float64(r.rawTTY),
			r.kTTY, r.facts, r.color, r.kColor, r.facts, r.nocolor, r.kNocolor, r.facts, r.kPipe, r.facts)
		sum = row{sum.rawTTY + r.rawTTY, sum.rawPipe + r.rawPipe, sum.tty + r.tty, sum.color + r.color, sum.nocolor + r.nocolor,
			sum.pipe + r.pipe, sum.kTTY + r.kTTY, sum.kColor + r.kColor, sum.kNocolor + r.kNocolor, sum.kPipe + r.kPipe, sum.facts + r.facts}
		b.Run(ct.name, func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(float64(r.rawTTY), "raw-tokens")
			b.ReportMetric(float64(r.tty), "text-tokens")
			b.ReportMetric(float64(r.rawPipe), "pipe-tokens")
		})
	}
	r := sum
	fmt.Fprintf(&sb, "| **total** | %d | %d | %d | %d | %.2f | %.2f | %d/%d | %d | %d/%d | %d | %d/%d | %d/%d |\n",
		r.rawTTY, r.tty, r.rawPipe, r.pipe, float64(r.tty)/float64(r.rawPipe), float64(r.tty)/float64(r.rawTTY),
		r.kTTY, r.facts, r.color, r.kColor, r.facts, r.nocolor, r.kNocolor, r.facts, r.kPipe, r.facts)
	b.Log(sb.String())
}
