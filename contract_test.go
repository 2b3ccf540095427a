package ptyhub_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
	"github.com/ptyhub/ptyhub/termtext"
	"github.com/ptyhub/ptyhub/truncate"
)

// TestPipeControlKeys: on a pipe session (tty false) ^C and ^\ signal the process group
// and ^D closes stdin, as a terminal's line discipline would; the bytes are not written.
func TestPipeControlKeys(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	off := new(false)
	t.Run("ctrl-c", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, YieldTimeMs: new(int64(10000)), WaitFor: "READY",
			Argv: []string{"python3", "-u", "-c", "import time\ntry:\n    print('READY')\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('INTERRUPTED')\n"}})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\u0003", YieldTimeMs: new(int64(10000))})
		out, r := untilExit(t, c, r)
		if !strings.Contains(out, "INTERRUPTED") || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("^C on pipes: output %q, exit %s %q", out, exitOf(r), r.Signal)
		}
	})
	t.Run("keys C-c", func(t *testing.T) {
		t.Parallel()
		// sleep itself, not `bash -c 'sleep 60'`: bash catches SIGINT and SIGQUIT for a
		// moment while it starts, and a signal landing then is lost (as in a terminal).
		r := exec(t, c, session.ExecRequest{TTY: off, Argv: []string{"sleep", "60"}, YieldTimeMs: new(int64(0))})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Keys: []string{"C-c"}, YieldTimeMs: new(int64(10000))})
		_, r = untilExit(t, c, r)
		if r.Signal != "SIGINT" {
			t.Errorf("keys C-c on pipes: exit %s %q, want SIGINT", exitOf(r), r.Signal)
		}
	})
	t.Run("ctrl-backslash", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, Argv: []string{"sleep", "60"}, YieldTimeMs: new(int64(0))})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\u001c", YieldTimeMs: new(int64(10000))})
		_, r = untilExit(t, c, r)
		if r.Signal != "SIGQUIT" {
			t.Errorf("^\\ on pipes: exit %s %q, want SIGQUIT", exitOf(r), r.Signal)
		}
	})
	t.Run("ctrl-d", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, Cmd: "wc -c", YieldTimeMs: new(int64(0))})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "abc\u0004", YieldTimeMs: new(int64(10000))})
		out, r := untilExit(t, c, r)
		if strings.TrimSpace(out) != "3" || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("^D on pipes: output %q, exit %s %q; want 3 bytes counted and exit 0", out, exitOf(r), r.Signal)
		}
	})
}

// TestWriteToExited: input to an exited session is refused the same way whether this
// client was told of the exit, kill_session ended it, or another client sees it; and
// kill_session with a signal reports the state after the signal took effect.
func TestWriteToExited(t *testing.T) {
	t.Parallel()
	m, c := newClient(t, session.Options{})
	other := m.NewClient("other")
	refused := func(name string, c *session.Client, id string) {
		t.Helper()
		_, err := c.Write(context.Background(), session.WriteRequest{SessionID: id, Chars: "x\n"})
		if !errors.Is(err, session.ErrExited) || !strings.Contains(err.Error(), "nothing was written") {
			t.Errorf("%s: write to an exited session: %v, want ErrExited saying nothing was written", name, err)
		}
	}

	r := exec(t, c, session.ExecRequest{Cmd: "echo hi"})
	if r.State != session.StateExited {
		t.Fatalf("echo hi: %+v", r)
	}
	refused("exit reported to this client", c, r.SessionID)
	refused("exit seen by another client", other, r.SessionID)

	r = exec(t, c, session.ExecRequest{Cmd: "exec sleep 60", YieldTimeMs: new(int64(0))})
	if _, err := c.Kill(context.Background(), session.KillRequest{SessionID: r.SessionID}); err != nil {
		t.Fatal(err)
	}
	refused("ended by kill_session", c, r.SessionID)

	for _, sig := range []string{"TERM", "KILL"} {
		for _, tty := range []bool{true, false} {
			r = exec(t, c, session.ExecRequest{Argv: []string{"sleep", "60"}, TTY: &tty, YieldTimeMs: new(int64(0))})
			k, err := c.Kill(context.Background(), session.KillRequest{SessionID: r.SessionID, Signal: sig})
			if err != nil {
				t.Fatal(err)
			}
			if k.State != session.StateExited || k.Signal != "SIG"+sig {
				t.Errorf("kill_session signal %s (tty %v) to sleep: state %s signal %q, want exited by SIG%s", sig, tty, k.State, k.Signal, sig)
			}
			refused("ended by kill_session "+sig, c, r.SessionID)
		}
	}
}

// TestPollWaitsForNews: an empty poll of a shell that waits for input waits for the
// output of its background job instead of returning at once with nothing.
func TestPollWaitsForNews(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Argv: []string{"bash", "--norc", "--noprofile", "-i"},
		Env: map[string]string{"PS1": "$ "}, YieldTimeMs: new(int64(10000))})
	if r.ReturnedBecause != session.BecauseWaitingForInput {
		t.Fatalf("bash: returned because %s, output %q", r.ReturnedBecause, r.Output)
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "(sleep 1; echo BG$((6*7))DONE) &\n", YieldTimeMs: new(int64(10000))})
	out := r.Output
	for i := 0; i < 3 && !strings.Contains(out, "BG42DONE"); i++ {
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(10000))})
		out += r.Output
		if r.Output == "" && r.ReturnedBecause != session.BecauseDeadline {
			t.Errorf("empty poll returned at once with nothing, because %s", r.ReturnedBecause)
		}
	}
	if !strings.Contains(out, "BG42DONE") {
		t.Errorf("the background job's output never came: %q", out)
	}
}

// TestKeysFollowTerminalModes: after less sets the cursor-key mode (ESC [ ? 1 h), keys
// ["Down"] sends ESC O B, which less takes as a line down.
func TestKeysFollowTerminalModes(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: "seq 1 200 | less", YieldTimeMs: new(int64(10000))})
	if r.ReturnedBecause != session.BecauseWaitingForInput {
		t.Fatalf("less: returned because %s: %q", r.ReturnedBecause, r.Output)
	}
	top := func() string {
		t.Helper()
		rr, err := c.Read(context.Background(), session.ReadRequest{SessionID: r.SessionID, View: "screen"})
		if err != nil {
			t.Fatal(err)
		}
		return rr.Screen.Rows[0]
	}
	if got := top(); got != "1" {
		t.Fatalf("less starts with row %q, want 1", got)
	}
	for i, want := range []string{"2", "3"} {
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Keys: []string{"Down"}, YieldTimeMs: new(int64(10000))})
		if got := top(); got != want {
			t.Fatalf("after %d× Down the top row is %q, want %q", i+1, got, want)
		}
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Keys: []string{"Up"}, YieldTimeMs: new(int64(10000))})
	if got := top(); got != "2" {
		t.Errorf("after Up the top row is %q, want 2", got)
	}
	write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "q", YieldTimeMs: new(int64(10000))})
}

// TestWaitForSkipsEcho: wait_for matches what the program printed, not the terminal's
// echo of the command line that was typed, and matches per line (^ and $ at line ends).
func TestWaitForSkipsEcho(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	var r *session.Result
	for _, pat := range []string{"DONE", "^DONE$", "ON"} {
		// A shell waiting at its prompt, as an agent finds it.
		r = exec(t, c, session.ExecRequest{Argv: []string{"bash", "--norc", "--noprofile", "-i"},
			Env: map[string]string{"PS1": "$ "}, YieldTimeMs: new(int64(10000))})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "sleep 0.2; echo DONE\n", WaitFor: pat, YieldTimeMs: new(int64(10000))})
		if r.ReturnedBecause != session.BecausePattern || !strings.Contains("\n"+r.Output, "\nDONE") {
			t.Errorf("wait_for %q: returned because %s with %q; want the program's DONE line", pat, r.ReturnedBecause, r.Output)
		}
	}
	// A program that prints what it read: its line is not the echo.
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "cat\n", WaitFor: `^cat$`, YieldTimeMs: new(int64(300))})
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "hello\n", WaitFor: "^hello$", YieldTimeMs: new(int64(10000))})
	if r.ReturnedBecause != session.BecausePattern || strings.Count(r.Output, "hello") != 2 {
		t.Errorf("wait_for ^hello$ on cat: returned because %s with %q; want the echo and cat's line", r.ReturnedBecause, r.Output)
	}
	// On pipes there is no echo; ^/$ still anchor at line boundaries.
	r = exec(t, c, session.ExecRequest{Cmd: "echo one; echo DONE; sleep 60", TTY: new(false), WaitFor: "^DONE$", YieldTimeMs: new(int64(10000))})
	if r.ReturnedBecause != session.BecausePattern {
		t.Errorf("wait_for ^DONE$ on pipes: returned because %s with %q", r.ReturnedBecause, r.Output)
	}
	c.Kill(context.Background(), session.KillRequest{SessionID: r.SessionID})
}

// TestNotWaitingWhileQueryOwed: a program in raw mode that asks for the cursor position
// and waits for the answer (as prompt_toolkit does at every prompt) is not waiting for
// the agent: ptyhub answers, and the program prints and exits.
func TestNotWaitingWhileQueryOwed(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	script := `import os, sys, tty
tty.setraw(0)
os.write(1, b"\x1b[6n")
buf = b""
while not buf.endswith(b"R"):
    buf += os.read(0, 64)
os.write(1, b"GOT " + buf[1:] + b"\r\n")
`
	for i := 0; i < 20; i++ {
		r := exec(t, c, session.ExecRequest{Argv: []string{"python3", "-c", script}, YieldTimeMs: new(int64(10000))})
		if r.ReturnedBecause != session.BecauseExit || !strings.Contains(r.Output, "GOT [1;1R") {
			t.Fatalf("run %d: returned because %s with %q; want the exit after the answer", i, r.ReturnedBecause, r.Output)
		}
	}
}

// randomOutput returns n lines of varied terminal output: words, logs, JSON, CJK,
// colours, progress bars rewritten with \r, long lines and empty ones.
func randomOutput(r *rand.Rand, n int) []byte {
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"}
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		switch r.IntN(8) {
		case 0:
			fmt.Fprintf(&b, "%d %s %s\n", i, words[r.IntN(len(words))], words[r.IntN(len(words))])
		case 1:
			fmt.Fprintf(&b, "2026-11-23T21:%02d:%02d ERROR line %d: connection reset by peer\n", r.IntN(60), r.IntN(60), i)
		case 2:
			fmt.Fprintf(&b, `{"id": %d, "name": "%s", "ok": %v}`+"\n", i, words[r.IntN(len(words))], r.IntN(2) == 0)
		case 3:
			fmt.Fprintf(&b, "第%d行 日本語のテキストと中文文本\n", i)
		case 4:
			fmt.Fprintf(&b, "\x1b[3%dm%s\x1b[0m line %d\n", r.IntN(8), words[r.IntN(len(words))], i)
		case 5:
			fmt.Fprintf(&b, "%d: 10%%\r%d: 50%%\r%d: 100%%\n", i, i, i)
		case 6:
			fmt.Fprintf(&b, "%d %s\n", i, strings.Repeat(words[r.IntN(len(words))]+" ", 10+r.IntN(60)))
		default:
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// checkCut checks one truncated result against full, the whole text it was cut from:
// the text read back from its truncated_range is exactly the cut text, or that widened
// to the whole line at an edge. read reads the text view of a raw range.
func checkCut(t *testing.T, name, output, full string, rng [2]int64, read func(from, to int64) string) {
	t.Helper()
	i := strings.Index(output, "tokens truncated…\n")
	if i < 0 {
		t.Fatalf("%s: no marker in %q", name, output)
	}
	m := strings.LastIndex(output[:i], "…")
	head, tail := output[:m], output[i+len("tokens truncated…\n"):]
	if !strings.HasPrefix(full, head) {
		head = strings.TrimSuffix(head, "\n") // join added it after a partial line
	}
	if !strings.HasPrefix(full, head) || !strings.HasSuffix(full, tail) || len(head)+len(tail) > len(full) {
		t.Fatalf("%s: head %q / tail %q are not the ends of the text", name, head, tail)
	}
	from, to := len(head), len(full)-len(tail)
	lineFrom := strings.LastIndexByte(full[:from], '\n') + 1
	lineTo := to
	if to > 0 && full[to-1] != '\n' {
		if j := strings.IndexByte(full[to:], '\n'); j >= 0 {
			lineTo = to + j + 1
		} else {
			lineTo = len(full)
		}
	}
	got := read(rng[0], rng[1])
	// Exact, or widened to the line at either edge (a plain line is cut exactly).
	// (The marker line cannot tell a head that ended with "\n" from one cut just before
	// it, which join ends with "\n": then the cut text starts with that "\n".)
	for _, x := range []int{from, lineFrom, max(from-1, 0)} {
		for _, y := range []int{to, lineTo} {
			if got == full[x:y] {
				return
			}
		}
	}
	if want := full[lineFrom:lineTo]; got != want {
		t.Fatalf("%s: range %v reads back %d bytes %q…%q,\nwant the cut text widened to its lines, %d bytes %q…%q (cut %d bytes)",
			name, rng, len(got), head10(got), tail10(got), len(want), head10(want), tail10(want), to-from)
	}
}

func head10(s string) string { return s[:min(len(s), 60)] }
func tail10(s string) string { return s[max(0, len(s)-60):] }

// TestTruncatedRangeExact: over random outputs, budgets and write chunkings, on terminals
// and pipes, in normal and flood collection, the truncated_range of a result names
// exactly the raw bytes whose text was cut (widened at most to whole lines), a
// read_output of it that is cut again names a smaller range inside it, and following
// the ranges reaches the cut text.
func TestTruncatedRangeExact(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	dir := t.TempDir()
	for seed := range 12 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(seed), 7))
			lines := []int{60, 400, 3000, 8000}[seed%4]
			data := randomOutput(r, lines)
			file := filepath.Join(dir, fmt.Sprintf("out%d", seed))
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			tty := seed%3 != 2
			budget := []int64{40, 120, 400, 1500}[r.IntN(4)]
			// The program writes the file in random pieces, so reads split it anywhere.
			script := fmt.Sprintf(`import os, random
random.seed(%d)
d = open(%q, "rb").read()
i = 0
while i < len(d):
    n = random.choice([1, 7, 100, 1000, 4096, 20000])
    os.write(1, d[i:i+n])
    i += n
`, seed, file)
			res := exec(t, c, session.ExecRequest{Argv: []string{"python3", "-c", script}, TTY: &tty,
				MaxOutputTokens: new(int64(budget)), YieldTimeMs: new(int64(30000))})
			if res.State != session.StateExited {
				t.Fatalf("the program did not finish in one call: %+v", res.ReturnedBecause)
			}
			read, whole := rangeReads(t, c, res.SessionID)
			name := fmt.Sprintf("%d lines, tty %v, budget %d", lines, tty, budget)
			full := whole(0, res.NextOffset)
			if res.TruncatedRange == nil {
				if res.Output != full {
					t.Fatalf("%s: not cut, but the output differs from the text", name)
				}
				return
			}
			checkCut(t, name, res.Output, full, *res.TruncatedRange, whole)
			checkNested(t, name, *res.TruncatedRange, int64(budget), read, whole)
		})
	}
}

// TestCLIReadRange: ptyhub read --from --to --max-tokens --json reads as read_output does,
// through the server: seq 1 2000 cut to 300 tokens names a range that reads back the cut
// lines, and a nested read of it names a smaller range inside it.
func TestCLIReadRange(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	var res session.Result
	if err := json.Unmarshal([]byte(h.ok("exec", "--json", "--max-tokens", "300", "seq", "1", "2000")), &res); err != nil {
		t.Fatal(err)
	}
	if res.TruncatedRange == nil {
		t.Fatalf("seq 1 2000 at 300 tokens: not cut: %q", res.Output)
	}
	rng := *res.TruncatedRange
	var head []string // the lines before the marker
	for _, l := range strings.Split(res.Output, "\n") {
		if strings.Contains(l, "truncated") {
			break
		}
		head = append(head, l)
	}
	// The raw offsets of seq's lines on a terminal ("N\r\n"): the cut is whole lines.
	off := map[int]int64{}
	var o int64
	for i := 1; i <= 2001; i++ {
		off[i] = o
		o += int64(len(fmt.Sprint(i)) + 2)
	}
	first, _ := strconv.Atoi(head[len(head)-1])
	first++ // the first cut line
	back := h.ok("read", res.SessionID, "--from", fmt.Sprint(rng[0]), "--to", fmt.Sprint(rng[1]), "--max-tokens", "250000")
	if !strings.HasPrefix(back, fmt.Sprintf("%d\n", first)) || rng[0] != off[first] {
		t.Errorf("range %v reads back %q…; want it to start at line %d (offset %d)", rng, back[:min(len(back), 20)], first, off[first])
	}
	var nested session.Result
	if err := json.Unmarshal([]byte(h.ok("read", res.SessionID, "--from", fmt.Sprint(rng[0]), "--to", fmt.Sprint(rng[1]), "--max-tokens", "300", "--json")), &nested); err != nil {
		t.Fatal(err)
	}
	if nested.TruncatedRange == nil || nested.TruncatedRange[0] <= rng[0] || nested.TruncatedRange[1] >= rng[1] {
		t.Errorf("nested read of %v: range %v, want a smaller one inside", rng, nested.TruncatedRange)
	}
}

// TestMCPContract drives the agent's contract through `ptyhub mcp` and the server with
// the official TypeScript MCP client (testdata/mcpclient/client.mjs, scenario "contract").
func TestMCPContract(t *testing.T) {
	t.Parallel()
	node := testtool.Path(t, "node") // Node.js 18 or later runs the TypeScript MCP client
	dir := e2eClientDir(t)
	bin := e2eBuildPtyhub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"), bin, "contract")
	cmd.Dir = dir
	cmd.Env = svNew(t).env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	steps := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("client printed a line that is not JSON: %q", line)
		}
		name, _ := m["step"].(string)
		steps[name] = m
	}
	if runErr != nil {
		t.Fatalf("client: %v\nstderr:\n%s", runErr, stderr.String())
	}
	get := func(name string, wantError bool) (string, map[string]any) {
		t.Helper()
		m, ok := steps[name]
		if !ok {
			t.Errorf("step %s missing", name)
			return "", map[string]any{}
		}
		text, _ := m["text"].(string)
		if isErr, _ := m["isError"].(bool); isErr != wantError {
			t.Errorf("step %s: isError %v, want %v: %s", name, isErr, wantError, text)
		}
		st, _ := m["structured"].(map[string]any)
		if st == nil {
			st = map[string]any{}
		}
		return text, st
	}

	// wait_for matches the program's DONE line, not the echo of the command line.
	if _, st := get("c_wait_for", false); st["returned_because"] != "pattern" || !strings.Contains("\n"+fmt.Sprint(st["output"]), "\nDONE\n") {
		t.Errorf("wait_for ^DONE$: %v %q", st["returned_because"], st["output"])
	}
	// An empty poll waits for the background job's output.
	_, bg := get("c_bg", false)
	_, poll := get("c_poll", false)
	if !strings.Contains(fmt.Sprint(bg["output"])+fmt.Sprint(poll["output"]), "BG42DONE") {
		t.Errorf("poll: %v %q", poll["returned_because"], poll["output"])
	}
	// Down in less (cursor-key mode) scrolls one line.
	if _, st := get("c_screen", false); st["screen"] == nil || fmt.Sprint(st["screen"].(map[string]any)["rows"].([]any)[0]) != "2" {
		t.Errorf("less after Down: screen %v", st["screen"])
	}
	// ^C on pipes interrupts.
	if _, st := get("c_ctrl_c", false); !strings.Contains(fmt.Sprint(st["output"]), "INTERRUPTED") {
		t.Errorf("^C on pipes: %v %q", st["returned_because"], st["output"])
	}
	// Codex's own arguments: accepted, ignored with a warning.
	if text, st := get("c_codex_args", false); !strings.Contains(text, "ignored justification, prefix_rule, sandbox_permissions") || st["exit_code"] != 0.0 {
		t.Errorf("Codex's arguments: %s", text)
	}
	// kill_session {signal} reports the exit; input to the exited session is an error.
	if _, st := get("c_term", false); st["state"] != "exited" || st["signal"] != "SIGTERM" {
		t.Errorf("kill_session TERM: %v", st)
	}
	if text, _ := get("c_write_exited", true); !strings.Contains(text, "nothing was written") {
		t.Errorf("write to the killed session: %s", text)
	}
	// The cut range of seq 1 2000 reads back the cut lines; a nested read shrinks it.
	_, seq := get("c_seq", false)
	rng, _ := seq["truncated_range"].([]any)
	_, back := get("c_read_range", false)
	_, nested := get("c_read_nested", false)
	if len(rng) != 2 {
		t.Fatalf("seq 1 2000 at 300 tokens: truncated_range %v", seq["truncated_range"])
	}
	out := fmt.Sprint(seq["output"])
	headEnd := out[:strings.Index(out, "…")]
	last := strings.Split(strings.TrimSuffix(headEnd, "\n"), "\n")
	n, _ := strconv.Atoi(last[len(last)-1])
	if !strings.HasPrefix(fmt.Sprint(back["output"]), fmt.Sprintf("%d\n", n+1)) {
		t.Errorf("range %v reads back %.40q…, want it to start at line %d", rng, back["output"], n+1)
	}
	in, _ := nested["truncated_range"].([]any)
	if len(in) != 2 || in[0].(float64) <= rng[0].(float64) || in[1].(float64) >= rng[1].(float64) {
		t.Errorf("nested read of %v: range %v", rng, nested["truncated_range"])
	}
	// The same bytes, read again at another budget, count the same.
	if _, all := get("c_read_all", false); all["original_token_count"] == nil || all["original_token_count"] != seq["original_token_count"] {
		t.Errorf("original_token_count: exec at 300 tokens %v, read_output of the same range at 2000 %v", seq["original_token_count"], all["original_token_count"])
	}
	// A program waiting for a terminal query's answer is not waiting for the agent.
	if _, st := get("c_cpr", false); st["returned_because"] != "exit" || !strings.Contains(fmt.Sprint(st["output"]), "GOT [1;1R") {
		t.Errorf("cursor position query: %v %q", st["returned_because"], st["output"])
	}
	if t.Failed() {
		t.Logf("client stderr:\n%s", stderr.String())
	}
}

// tokenTexts returns about size bytes of each kind of output the count must hold on.
func tokenTexts(t *testing.T, size int) map[string][]byte {
	r := rand.New(rand.NewPCG(3, 4))
	out := map[string][]byte{}
	gen := func(name string, line func(i int) string) {
		var b bytes.Buffer
		for i := 0; b.Len() < size; i++ {
			b.WriteString(line(i))
		}
		out[name] = b.Bytes()
	}
	var code bytes.Buffer
	for code.Len() < size {
		files, _ := filepath.Glob("session/*.go")
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			code.Write(b)
		}
	}
	out["code"] = code.Bytes()[:size]
	gen("logs", func(i int) string {
		return fmt.Sprintf("2026-11-23T21:%02d:%02d.%03dZ INFO  worker-%d processed job %d in %dms (queue=%d)\n", r.IntN(60), r.IntN(60), r.IntN(1000), r.IntN(16), i, r.IntN(5000), r.IntN(100))
	})
	gen("json", func(i int) string {
		return fmt.Sprintf(`{"id":%d,"user":"user%d","tags":["a%d","b"],"score":%.3f,"active":%v}`+"\n", i, r.IntN(1e6), r.IntN(9), r.Float64()*100, r.IntN(2) == 0)
	})
	cjk := []rune("的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从")
	gen("cjk", func(i int) string {
		var b strings.Builder
		for range 20 + r.IntN(40) {
			b.WriteRune(cjk[r.IntN(len(cjk))])
		}
		return b.String() + "\n"
	})
	gen("base64", func(i int) string {
		b := make([]byte, 57)
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		return base64.StdEncoding.EncodeToString(b) + "\n"
	})
	gen("ansi", func(i int) string {
		return fmt.Sprintf("\x1b[1;3%dm%s\x1b[0m \x1b[2m%d\x1b[0m ok \x1b[32m✓\x1b[0m test_%d passed\n", r.IntN(8), []string{"PASS", "FAIL", "SKIP"}[r.IntN(3)], i, r.IntN(1e4))
	})
	return out
}

// TestTokenCountStable: original_token_count is within 2% of the exact o200k count over
// varied text, and the same bytes give the same count whatever the budget, the write
// chunking and the collection mode (normal or flood), through exec and read_output.
func TestTokenCountStable(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	dir := t.TempDir()
	for name, data := range tokenTexts(t, 1<<20) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(dir, name)
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			exact := truncate.Count(termtext.String(data))
			var counts []int
			for i, chunks := range []string{"[4096]", "[1, 100, 7000, 65536]"} {
				script := fmt.Sprintf("import os, random\nrandom.seed(%d)\nd = open(%q, 'rb').read()\ni = 0\nwhile i < len(d):\n    n = random.choice(%s)\n    os.write(1, d[i:i+n])\n    i += n\n", i, file, chunks)
				budget := []int64{200, 3000}[i]
				r := exec(t, c, session.ExecRequest{Argv: []string{"python3", "-c", script}, TTY: new(true), MaxOutputTokens: new(int64(budget)), YieldTimeMs: new(int64(60000))})
				if r.State != session.StateExited || r.OriginalTokenCount == nil {
					t.Fatalf("%s: %s, count %v", name, r.ReturnedBecause, r.OriginalTokenCount)
				}
				counts = append(counts, *r.OriginalTokenCount)
				for _, b := range []int64{2000, 5000} {
					from, to := int64(0), r.NextOffset
					rr, err := c.Read(context.Background(), session.ReadRequest{SessionID: r.SessionID, From: &from, To: &to, MaxOutputTokens: new(int64(b))})
					if err != nil || rr.OriginalTokenCount == nil {
						t.Fatalf("read: %v %+v", err, rr)
					}
					counts = append(counts, *rr.OriginalTokenCount)
				}
			}
			for _, n := range counts[1:] {
				if n != counts[0] {
					t.Errorf("%s: the same bytes counted %v (exec at budget 200 and 3000 with different chunkings, read at 2000 and 5000)", name, counts)
					break
				}
			}
			if d := math.Abs(float64(counts[0]-exact)) / float64(exact); d > 0.02 {
				t.Errorf("%s: counted %d, exact o200k %d: off by %.1f%%", name, counts[0], exact, 100*d)
			} else {
				t.Logf("%s: counted %d, exact %d (%.2f%% off)", name, counts[0], exact, 100*float64(counts[0]-exact)/float64(exact))
			}
		})
	}
}
