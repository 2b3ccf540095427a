package ptyhub_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/session"
)

func newClient(t *testing.T, opts session.Options) (*session.Manager, *session.Client) {
	t.Helper()
	m, err := session.NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return m, m.NewClient("test")
}

func exec(t *testing.T, c *session.Client, req session.ExecRequest) *session.Result {
	t.Helper()
	r, err := c.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("exec %+v: %v", req, err)
	}
	return r
}

func write(t *testing.T, c *session.Client, req session.WriteRequest) *session.Result {
	t.Helper()
	r, err := c.Write(context.Background(), req)
	if err != nil {
		t.Fatalf("write %+v: %v", req, err)
	}
	return r
}

// untilExit polls a session until it exits, returning all output collected on the way.
func untilExit(t *testing.T, c *session.Client, r *session.Result) (string, *session.Result) {
	t.Helper()
	var out strings.Builder
	out.WriteString(r.Output)
	for r.State != session.StateExited {
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(5000))})
		out.WriteString(r.Output)
	}
	return out.String(), r
}

func TestExecExit(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	cases := []struct {
		name   string
		req    session.ExecRequest
		code   int // -1: expect signal
		signal string
		out    string
	}{
		{"echo", session.ExecRequest{Cmd: "echo hi"}, 0, "", "hi\n"},
		{"exit code", session.ExecRequest{Cmd: "echo bye; exit 3"}, 3, "", "bye\n"},
		{"argv", session.ExecRequest{Argv: []string{"printf", "%s-%s\n", "a b", "c"}}, 0, "", "a b-c\n"},
		{"sigterm", session.ExecRequest{Cmd: "kill -TERM $$"}, -1, "SIGTERM", ""},
		{"sigsegv", session.ExecRequest{Argv: []string{"sh", "-c", "kill -SEGV $$"}}, -1, "SIGSEGV", ""},
		{"not found", session.ExecRequest{Argv: []string{"no-such-program-xyz"}}, 127, "", "ptyhub: no-such-program-xyz: command not found\n"},
		{"pipes", session.ExecRequest{Cmd: "echo out; echo err >&2", TTY: new(false)}, 0, "", "out\nerr\n"},
		{"colour and progress", session.ExecRequest{Cmd: `printf '\033[31mred\033[0m\n'; printf '10%%\r20%%\r100%%\n'`}, 0, "", "red\n100%\n"},
		{"utf8", session.ExecRequest{Cmd: `printf 'caf\303\251 \342\202\254\n'`}, 0, "", "café €\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := exec(t, c, tc.req)
			out, r := untilExit(t, c, r)
			if r.ReturnedBecause != session.BecauseExit {
				t.Errorf("returned because %q, want exit", r.ReturnedBecause)
			}
			if tc.code >= 0 && (r.ExitCode == nil || *r.ExitCode != tc.code) {
				t.Errorf("exit code %v signal %q, want %d", r.ExitCode, r.Signal, tc.code)
			}
			if tc.signal != "" && r.Signal != tc.signal {
				t.Errorf("signal %q, want %q", r.Signal, tc.signal)
			}
			if out != tc.out {
				t.Errorf("output %q, want %q", out, tc.out)
			}
		})
	}
}

func TestWorkdirEnvProfile(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	dir := t.TempDir()
	r := exec(t, c, session.ExecRequest{
		Cmd:     `pwd; echo "FOO=$FOO TERM=$TERM NO_COLOR=$NO_COLOR CARGO=$CARGO_TERM_PROGRESS_WHEN PAGER=$PAGER GIT_PAGER=$GIT_PAGER S=$PTYHUB_SESSION"; stty size`,
		Workdir: dir, Env: map[string]string{"FOO": "bar baz"}, Rows: 30, Cols: 100,
	})
	out, r := untilExit(t, c, r)
	want := dir + "\nFOO=bar baz TERM=xterm-256color NO_COLOR=1 CARGO=never PAGER=cat GIT_PAGER=cat S=" + r.UUID + "\n30 100\n"
	if out != want {
		t.Errorf("got %q\nwant %q", out, want)
	}
	if r.Profile != "" && r.Profile != session.ProfileAgent {
		t.Errorf("profile %q", r.Profile)
	}
	r = exec(t, c, session.ExecRequest{Cmd: `echo "[$FOO][$NO_COLOR][$TERM]"`, ClearEnv: true, Profile: "plain", Env: map[string]string{"FOO": "1"}})
	if out, _ := untilExit(t, c, r); out != "[1][][xterm-256color]\n" {
		t.Errorf("clear_env + plain: %q", out)
	}
}

// TestLosslessBetweenCalls polls a slow producer with short yields: every line arrives
// exactly once, in order, across calls.
func TestLosslessBetweenCalls(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: `for i in $(seq 1 300); do echo line$i; [ $((i % 50)) = 0 ] && sleep 0.05; done`, YieldTimeMs: new(int64(0))})
	var out strings.Builder
	out.WriteString(r.Output)
	for i := 0; r.State != session.StateExited; i++ {
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(int64(i % 20)))})
		out.WriteString(r.Output)
	}
	var want strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&want, "line%d\n", i)
	}
	if out.String() != want.String() {
		t.Errorf("output differs:\n%s", out.String())
	}
}

func TestSplitUTF8AcrossCalls(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: `stty -echo; printf '\342\202'; read x; printf '\254\n'`, WaitFor: "never", YieldTimeMs: new(int64(300))})
	first := r.Output
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\n", YieldTimeMs: new(int64(5000))})
	out, _ := untilExit(t, c, r)
	all := first + out
	if strings.ContainsRune(all, utf8.RuneError) || !strings.Contains(all, "€") {
		t.Errorf("split UTF-8: first %q then %q", first, out)
	}
}

func TestTruncationAndReread(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: "seq 1 20000", MaxOutputTokens: new(int64(300))})
	out, r := untilExit(t, c, r)
	if r.OriginalTokenCount == nil || r.TruncatedRange == nil {
		t.Fatalf("not truncated: %q", out)
	}
	if !strings.HasPrefix(out, "1\n2\n3\n") || !strings.HasSuffix(out, "19999\n20000\n") || !strings.Contains(out, "tokens truncated…") {
		t.Errorf("head/marker/tail wrong: %q", out)
	}
	if strings.Contains(out, "\n10000\n") {
		t.Errorf("middle not cut")
	}
	from, to := r.TruncatedRange[0], r.TruncatedRange[1]
	rr, err := c.Read(context.Background(), session.ReadRequest{SessionID: r.SessionID, From: &from, To: &to, MaxOutputTokens: new(int64(100000))})
	if err != nil {
		t.Fatal(err)
	}
	// Everything cut is in the cut range: shown + re-read covers every number.
	all := out + "\n" + rr.Output
	for _, n := range []int{1, 500, 10000, 15000, 19999, 20000} {
		if !strings.Contains(all, "\n"+strconv.Itoa(n)+"\n") && !strings.HasPrefix(all, strconv.Itoa(n)+"\n") {
			t.Errorf("number %d is neither shown nor in the cut range", n)
		}
	}
}

func TestInterruptAndEOF(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	cases := []struct {
		name   string
		cmd    string
		w      session.WriteRequest
		signal string
		code   int
		out    string
	}{
		{"ctrl-c chars", "cat", session.WriteRequest{Chars: "\u0003"}, "SIGINT", -1, ""},
		{"ctrl-c key", "sleep 100", session.WriteRequest{Keys: []string{"C-c"}}, "SIGINT", -1, ""},
		{"eof", "stty -echo; cat", session.WriteRequest{Chars: "hello", CloseStdin: true}, "", 0, "hello"},
		{"eof after line", "stty -echo; wc -l", session.WriteRequest{Chars: "a\nb\n", CloseStdin: true}, "", 0, "2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := exec(t, c, session.ExecRequest{Cmd: tc.cmd, YieldTimeMs: new(int64(0))})
			tc.w.SessionID = r.SessionID
			tc.w.YieldTimeMs = new(int64(10000))
			r = write(t, c, tc.w)
			out, r := untilExit(t, c, r)
			if tc.signal != "" && r.Signal != tc.signal {
				t.Errorf("signal %q code %v, want %s", r.Signal, r.ExitCode, tc.signal)
			}
			if tc.code >= 0 && (r.ExitCode == nil || *r.ExitCode != tc.code) {
				t.Errorf("exit %v, want %d", r.ExitCode, tc.code)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("output %q lacks %q", out, tc.out)
			}
		})
	}
}

func TestStdinAtStart(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	for _, tty := range []bool{true, false} {
		r := exec(t, c, session.ExecRequest{Argv: []string{"python3", "-c", "import sys; print('LEN', len(sys.stdin.read()))"},
			Stdin: "abc\ndef\n", CloseStdin: true, TTY: &tty})
		out, r := untilExit(t, c, r)
		if !strings.Contains(out, "LEN 8") || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("tty=%v: %q exit %v", tty, out, r.ExitCode)
		}
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: "echo start; sleep 100", TimeoutMs: 300})
	out, r := untilExit(t, c, r)
	if !r.TimedOut || r.ExitCode == nil || *r.ExitCode != 124 || !strings.Contains(out, "start") {
		t.Errorf("timed_out %v exit %v out %q", r.TimedOut, r.ExitCode, out)
	}
}

func TestWaitFor(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Argv: []string{"bash", "--norc", "--noprofile", "-i"}, Env: map[string]string{"PS1": "PROMPT> "}, WaitFor: "PROMPT> $"})
	if r.ReturnedBecause != session.BecausePattern {
		t.Fatalf("returned because %s: %q", r.ReturnedBecause, r.Output)
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "echo $((6*7))\n", WaitFor: `(?m)^42$`, YieldTimeMs: new(int64(10000))})
	if r.ReturnedBecause != session.BecausePattern || !strings.Contains(r.Output, "42") {
		t.Errorf("%s: %q", r.ReturnedBecause, r.Output)
	}
	if r.State != session.StateRunning {
		t.Errorf("state %s", r.State)
	}
	// A prompt that arrives in a read of its own (no finished line with it) still matches.
	r = exec(t, c, session.ExecRequest{Cmd: `echo first; sleep 0.2; printf 'ready> '; sleep 100`, WaitFor: `ready> $`, YieldTimeMs: new(int64(60000))})
	if r.ReturnedBecause != session.BecausePattern || r.Output != "first\nready> " {
		t.Errorf("prompt alone in a chunk: %s %q", r.ReturnedBecause, r.Output)
	}
}

// TestKillSessionTree: an interactive bash with a plain job, a job ignoring HUP and TERM,
// a nohup job, a setsid escaper and a foreground job; kill_session leaves nothing.
func TestKillSessionTree(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Argv: []string{"bash", "--norc", "--noprofile", "-i"}, Env: map[string]string{"PS1": "$ "}, WaitFor: `\$ $`})
	script := `sleep 1001 & (trap '' HUP TERM; exec sleep 1002) & nohup sleep 1004 >/dev/null 2>&1 & setsid sh -c 'exec sleep 1005' </dev/null >/dev/null 2>&1 & echo READY; sleep 1003` + "\n"
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: script, WaitFor: "(?m)^READY", YieldTimeMs: new(int64(20000))})
	if r.ReturnedBecause != session.BecausePattern {
		t.Fatalf("jobs did not start: %q", r.Output)
	}
	// Each job runs its sleep once its last exec is done (setsid forks, then execs sh,
	// which execs sleep): a loaded machine may take longer than bash takes to print
	// READY, and a process in the middle of an exec shows no environment for a moment.
	// So wait on the process table for the five, not one look after a fixed pause.
	want := []string{"sleep 1001", "sleep 1002", "sleep 1003", "sleep 1004", "sleep 1005"}
	var found []string
	for deadline := time.Now().Add(60 * time.Second); ; {
		found = found[:0]
		for _, pid := range proctest.WithEnv("PTYHUB_SESSION=" + r.UUID) {
			found = append(found, proc.CommandLine(pid))
		}
		if !slices.ContainsFunc(want, func(w string) bool { return !slices.Contains(found, w) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session's processes are %q after 60 s; want bash and %q", found, want)
		}
		time.Sleep(10 * time.Millisecond) // a poll of the process table: its changes wake nobody
	}
	k, err := c.Kill(context.Background(), session.KillRequest{SessionID: r.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if k.State != session.StateExited {
		t.Errorf("state after kill: %s", k.State)
	}
	if left := proctest.WithEnv("PTYHUB_SESSION=" + r.UUID); len(left) > 0 {
		var desc []string
		for _, pid := range left {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			desc = append(desc, fmt.Sprintf("%d %q stat=%q", pid, cmd, st))
		}
		t.Errorf("processes left after kill: %v", desc)
	}
}

// TestSurvivorsNamed: processes that outlive the leader are killed and named.
func TestSurvivorsNamed(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: `setsid sleep 1007 </dev/null >/dev/null 2>&1 & nohup sleep 1008 >/dev/null 2>&1 & sleep 0.2; echo hi`})
	out, r := untilExit(t, c, r)
	if out != "hi\n" || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("%q %v", out, r.ExitCode)
	}
	names := fmt.Sprint(r.Survivors)
	if !strings.Contains(names, "sleep 1007") || !strings.Contains(names, "sleep 1008") {
		t.Errorf("survivors not named: %v", r.Survivors)
	}
	for i := 0; i < 1000 && len(proctest.WithEnv("PTYHUB_SESSION="+r.UUID)) > 0; i++ {
		c.List(context.Background()) // the sweep finishes aside; wait on the process table
	}
}

// TestPruning: the limit counts one client's running sessions. At the limit the least
// recently used is ended and kept as pruned history (said in ended_since_last_call and
// in the listing); ended sessions past the history bound are forgotten, oldest first,
// without warnings; other clients' sessions and sessions a human is attached to are
// never taken.
func TestPruning(t *testing.T) {
	t.Parallel()
	m, c := newClient(t, session.Options{}) // the defaults: 64 running, warn at 60, 8 protected, 64 ended kept
	ctx := context.Background()
	other := m.NewClient("other")
	theirs := exec(t, other, session.ExecRequest{Argv: []string{"sleep", "1000"}, YieldTimeMs: new(int64(0))})
	first := exec(t, c, session.ExecRequest{Argv: []string{"sleep", "1000"}, YieldTimeMs: new(int64(0))})
	att, err := m.Attach(first.SessionID, session.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Detach()
	var uuids []string
	warned, prunedNotices := false, 0
	for i := 0; i < 200; i++ {
		r := exec(t, c, session.ExecRequest{Argv: []string{"sleep", "1000"}, YieldTimeMs: new(int64(0))})
		uuids = append(uuids, r.UUID)
		for _, w := range r.Warnings {
			warned = warned || strings.Contains(w, "running sessions")
			if strings.Contains(w, "history") {
				t.Errorf("warning about history: %q", w)
			}
		}
		for _, e := range r.EndedSinceLastCall {
			if !e.Pruned {
				t.Errorf("ended session %s not marked pruned", e.SessionID)
			}
			prunedNotices++
		}
	}
	if !warned {
		t.Error("no warning near the limit")
	}
	l, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	running, pruned := 0, 0
	listed := map[string]session.Info{}
	for _, s := range l.Sessions {
		listed[s.UUID] = s
		switch {
		case s.State == session.StateRunning:
			running++
		case s.Pruned:
			pruned++
		default:
			t.Errorf("session %s exited without being pruned", s.SessionID)
		}
	}
	// 64 running (the attached one among them), 1 of the other client's, and the
	// last 64 pruned ones as history.
	if running != 65 || pruned != 64 {
		t.Errorf("%d running and %d pruned listed, want 65 and 64", running, pruned)
	}
	if prunedNotices < 136 {
		t.Errorf("%d pruned sessions reported in ended_since_last_call, want 137", prunedNotices)
	}
	if in := listed[theirs.UUID]; in.State != session.StateRunning {
		t.Errorf("the other client's session: %+v", in)
	}
	if in := listed[first.UUID]; in.State != session.StateRunning {
		t.Errorf("the session a human is attached to: %+v", in)
	}
	for _, u := range uuids {
		if n := len(proctest.WithEnv("PTYHUB_SESSION=" + u)); (listed[u].State == session.StateRunning) != (n == 1) {
			t.Errorf("session %s (%+v) has %d processes", u, listed[u], n)
		}
	}
	if _, err := c.Write(ctx, session.WriteRequest{SessionID: "3"}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("session 3, pruned long ago: %v", err)
	}
}

// TestSharedPool: clients of one pool (the server's CLI connections) share its limit;
// finished sessions are not load.
func TestSharedPool(t *testing.T) {
	t.Parallel()
	m, _ := newClient(t, session.Options{MaxSessions: 3, ProtectRecent: 1, KeepExited: 2})
	a, err := m.NewPoolClient("a", "cli", session.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.NewPoolClient("b", "cli", session.Caller{})
	for range 5 { // finished: history, never pruning anything
		exec(t, a, session.ExecRequest{Argv: []string{"true"}})
	}
	var ids []string
	for _, c := range []*session.Client{a, b, a} {
		r := exec(t, c, session.ExecRequest{Argv: []string{"sleep", "1000"}, YieldTimeMs: new(int64(0))})
		for _, w := range r.Warnings {
			if strings.Contains(w, "ended the least recently used") {
				t.Errorf("pruned before the limit: %q", w)
			}
		}
		ids = append(ids, r.SessionID)
	}
	r := exec(t, b, session.ExecRequest{Argv: []string{"sleep", "1000"}, YieldTimeMs: new(int64(0))})
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "session "+ids[0]+" ") {
		t.Errorf("the 4th running session of the pool did not prune session %s: %q", ids[0], r.Warnings)
	}
	l, _ := a.List(context.Background())
	exited := 0
	for _, s := range l.Sessions {
		if s.State == session.StateExited {
			exited++
		}
	}
	if exited > 2 {
		t.Errorf("%d ended sessions kept, the bound is 2", exited)
	}
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	ok := exec(t, c, session.ExecRequest{Cmd: "true"})
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"no cmd", func() error { _, err := c.Exec(ctx, session.ExecRequest{}); return err }, session.ErrInvalid},
		{"cmd and argv", func() error { _, err := c.Exec(ctx, session.ExecRequest{Cmd: "x", Argv: []string{"y"}}); return err }, session.ErrInvalid},
		{"negative yield", func() error {
			_, err := c.Exec(ctx, session.ExecRequest{Cmd: "true", YieldTimeMs: new(int64(-5))})
			return err
		}, session.ErrInvalid},
		{"bad regex", func() error { _, err := c.Exec(ctx, session.ExecRequest{Cmd: "true", WaitFor: "(["}); return err }, session.ErrInvalid},
		{"missing workdir", func() error {
			_, err := c.Exec(ctx, session.ExecRequest{Cmd: "true", Workdir: "/no/such/dir"})
			return err
		}, session.ErrInvalid},
		{"workdir is a file", func() error {
			_, err := c.Exec(ctx, session.ExecRequest{Cmd: "true", Workdir: "/etc/passwd"})
			return err
		}, session.ErrInvalid},
		{"env key", func() error {
			_, err := c.Exec(ctx, session.ExecRequest{Cmd: "true", Env: map[string]string{"B=C": "x"}})
			return err
		}, session.ErrInvalid},
		{"rows", func() error { _, err := c.Exec(ctx, session.ExecRequest{Cmd: "true", Rows: 5000}); return err }, session.ErrInvalid},
		{"profile", func() error { _, err := c.Exec(ctx, session.ExecRequest{Cmd: "true", Profile: "x"}); return err }, session.ErrInvalid},
		{"unknown session", func() error { _, err := c.Write(ctx, session.WriteRequest{SessionID: "99999"}); return err }, session.ErrNotFound},
		{"bad key", func() error {
			_, err := c.Write(ctx, session.WriteRequest{SessionID: ok.SessionID, Keys: []string{"Hyper-Q"}})
			return err
		}, session.ErrInvalid},
		{"write to exited", func() error {
			_, err := c.Write(ctx, session.WriteRequest{SessionID: ok.SessionID, Chars: "x"})
			return err
		}, session.ErrExited},
		{"bad signal", func() error {
			_, err := c.Kill(ctx, session.KillRequest{SessionID: ok.SessionID, Signal: "NOPE"})
			return err
		}, session.ErrInvalid},
		{"bad view", func() error {
			_, err := c.Read(ctx, session.ReadRequest{SessionID: ok.SessionID, View: "pdf"})
			return err
		}, session.ErrInvalid},
		{"bad range", func() error {
			_, err := c.Read(ctx, session.ReadRequest{SessionID: ok.SessionID, From: new(int64(10)), To: new(int64(5))})
			return err
		}, session.ErrInvalid},
		{"resize range", func() error {
			_, err := c.Resize(ctx, session.ResizeRequest{SessionID: ok.SessionID, Rows: 0, Cols: 80})
			return err
		}, session.ErrInvalid},
	}
	for _, tc := range cases {
		if err := tc.call(); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestCanonicalLineGuardAndQueuedInput(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: "cat", YieldTimeMs: new(int64(0))})
	_, err := c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, Chars: strings.Repeat("x", 5000) + "\n"})
	if !errors.Is(err, session.ErrInvalid) || !strings.Contains(err.Error(), "4095") {
		t.Errorf("long canonical line: %v", err)
	}
	// A program that never reads: the call returns and reports what is still queued.
	r = exec(t, c, session.ExecRequest{Cmd: "stty -icanon -echo; echo READY; sleep 1000", WaitFor: "READY"})
	w := write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: strings.Repeat("y", 512<<10), YieldTimeMs: new(int64(100))})
	if w.QueuedBytes == 0 {
		t.Errorf("no queued bytes reported: %s %s %v %q", w.State, w.Signal, w.ExitCode, w.Output)
	}
	// ^C queued behind the blocked write still interrupts (TIOCSIG).
	w = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\u0003", YieldTimeMs: new(int64(30000))})
	if _, w = untilExit(t, c, w); w.Signal != "SIGINT" {
		t.Errorf("^C behind a blocked write: signal %q exit %v", w.Signal, w.ExitCode)
	}
}

func TestResize(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: "read x; stty size", YieldTimeMs: new(int64(0))})
	if _, err := c.Resize(context.Background(), session.ResizeRequest{SessionID: r.SessionID, Rows: 50, Cols: 132}); err != nil {
		t.Fatal(err)
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\n", YieldTimeMs: new(int64(10000))})
	if out, _ := untilExit(t, c, r); !strings.Contains(out, "50 132") {
		t.Errorf("stty size after resize: %q", out)
	}
}

func TestEndedSinceLastCall(t *testing.T) {
	t.Parallel()
	m, c := newClient(t, session.Options{})
	a := exec(t, c, session.ExecRequest{Cmd: "read x; exit 7", YieldTimeMs: new(int64(0))})
	// Another client drives A to its end and waits for it.
	other := m.NewClient("other")
	r := write(t, other, session.WriteRequest{SessionID: a.SessionID, Chars: "\n", YieldTimeMs: new(int64(60000))})
	if _, r = untilExit(t, other, r); *r.ExitCode != 7 {
		t.Fatalf("exit %v", r.ExitCode)
	}
	if len(r.EndedSinceLastCall) != 0 {
		t.Errorf("the other client was told of a session it did not start: %+v", r.EndedSinceLastCall)
	}
	l, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.EndedSinceLastCall) != 1 || l.EndedSinceLastCall[0].SessionID != a.SessionID || *l.EndedSinceLastCall[0].ExitCode != 7 {
		t.Fatalf("ended since last call: %+v", l.EndedSinceLastCall)
	}
	if l, _ = c.List(context.Background()); len(l.EndedSinceLastCall) != 0 {
		t.Errorf("reported twice: %+v", l.EndedSinceLastCall)
	}
}

func TestCancelStopsWaitNotSession(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	r := exec(t, c, session.ExecRequest{Cmd: "echo started; sleep 1000", WaitFor: "started"})
	var wg sync.WaitGroup
	var res *session.Result
	wg.Go(func() {
		res, _ = c.Write(ctx, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(600000))})
	})
	cancel()
	wg.Wait()
	if res == nil || res.State != session.StateRunning || res.ReturnedBecause != session.BecauseCancelled {
		t.Fatalf("cancelled call: %+v", res)
	}
}

func TestManyConcurrentExecs(t *testing.T) {
	t.Parallel()
	testtool.KernelOnly(t, "without a subreaper each exit reads the whole process table; 100 at once exceed the default yield on a loaded 2-core machine")
	_, c := newClient(t, session.Options{MaxSessions: 200})
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for i := 0; i < 100; i++ {
		wg.Go(func() {
			r, err := c.Exec(context.Background(), session.ExecRequest{Cmd: "echo x" + strconv.Itoa(i)})
			if err != nil {
				errs <- err.Error()
				return
			}
			if r.State != session.StateExited || r.Output != "x"+strconv.Itoa(i)+"\n" || r.ExitCode == nil || *r.ExitCode != 0 {
				errs <- fmt.Sprintf("%d: %s %q code %v sig %q because %s", i, r.State, r.Output, r.ExitCode, r.Signal, r.ReturnedBecause)
				return
			}
			if false {
				errs <- fmt.Sprintf("%d: %s %q", i, r.State, r.Output)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// exitOf renders a result's exit code for a failure message ("none" while it runs).
func exitOf(r *session.Result) string {
	if r.ExitCode == nil {
		return "none"
	}
	return strconv.Itoa(*r.ExitCode)
}
