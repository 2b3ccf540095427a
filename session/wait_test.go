package session_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// Tests of wait_sessions and named sessions on real ptys. Each session that should have
// an event blocks on a fifo until the test writes to it, so which session fires first is
// decided by the test, not by timing.

func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// release lets the session reading fifo p go on.
func release(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("go\n"), 0o600); err != nil {
		t.Error(err)
	}
}

func mustExec(t *testing.T, c *session.Client, req session.ExecRequest) *session.Result {
	t.Helper()
	if req.YieldTimeMs == nil {
		req.YieldTimeMs = new(int64(0))
	}
	r, err := c.Exec(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wKill(c, r) })
	return r
}

// TestWaitFirstExit: a build, a test run and a dev server; one wait returns when the
// build finishes, with its output and exit code, the others described in one line each
// and their output left unread. A REPL the agent already saw waiting does not fire.
func TestWaitFirstExit(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	buildGo, testGo := fifo(t), fifo(t)
	build := mustExec(t, c, session.ExecRequest{Cmd: "echo compiling; cat " + buildGo + " >/dev/null; echo built; exit 3"})
	tests := mustExec(t, c, session.ExecRequest{Cmd: "cat " + testGo + " >/dev/null; echo PASS"})
	dev := mustExec(t, c, session.ExecRequest{Cmd: "echo listening-on-dev; sleep 1000", WaitFor: "listening", YieldTimeMs: new(int64(20_000))})
	// cat in non-canonical mode: a prompt's shape, which the quiet heuristic requires.
	repl := mustExec(t, c, session.ExecRequest{Cmd: "stty -icanon; exec cat", YieldTimeMs: new(int64(20_000))})
	if repl.ReturnedBecause != session.BecauseWaitingForInput {
		t.Fatalf("cat: returned because %s", repl.ReturnedBecause)
	}
	late := mustExec(t, c, session.ExecRequest{Cmd: "echo unread-line; sleep 1000"})

	done := make(chan *session.WaitResult, 1)
	go func() {
		r, err := c.Wait(context.Background(), session.WaitRequest{
			SessionIDs: []string{build.SessionID, tests.SessionID, dev.SessionID, repl.SessionID, late.SessionID},
			Until:      []string{session.UntilExit, session.UntilWaitingForInput}, TimeoutMs: new(int64(60_000))})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	release(t, buildGo)
	r := <-done
	if r == nil {
		return
	}
	if r.SessionID != build.SessionID || r.ReturnedBecause != session.BecauseExit || r.ExitCode == nil || *r.ExitCode != 3 {
		t.Fatalf("wait returned session %s because %s (exit %v), want the build's exit 3:\n%s", r.SessionID, r.ReturnedBecause, r.ExitCode, r.Text())
	}
	if !strings.Contains(r.Output, "built") {
		t.Errorf("output %q lacks the build's last line", r.Output)
	}
	if len(r.Others) != 4 {
		t.Errorf("others: %+v, want 4", r.Others)
	}
	for _, o := range r.Others {
		if o.State != session.StateRunning || o.Line == "" {
			t.Errorf("other session %+v", o)
		}
	}
	// Nothing of the others was consumed: the late session's line (printed before or
	// after the wait returned) still reaches the agent's next call.
	p, err := c.Write(context.Background(), session.WriteRequest{SessionID: late.SessionID, WaitFor: "unread-line", YieldTimeMs: new(int64(30_000))})
	if err != nil {
		t.Fatal(err)
	}
	if p.ReturnedBecause != session.BecausePattern && !strings.Contains(late.Output, "unread-line") {
		t.Errorf("the late session's output was lost: exec gave %q, poll gave %q; wait said %+v", late.Output, p.Output, r.Others)
	}
	// The default set: this client's sessions still running or not yet reported; the
	// test run is next.
	go func() {
		r, err := c.Wait(context.Background(), session.WaitRequest{Until: []string{session.UntilExit}, TimeoutMs: new(int64(60_000))})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	release(t, testGo)
	if r := <-done; r != nil && (r.SessionID != tests.SessionID || !strings.Contains(r.Output, "PASS")) {
		t.Errorf("second wait: %s", r.Text())
	}
}

// TestWaitForInput: a session that asks a question after the wait started fires
// waiting_for_input with the question; with until exit only it does not.
func TestWaitForInput(t *testing.T) {
	t.Parallel()
	wNeed(t, "bash")
	c := wClient(t)
	q := fifo(t)
	ask := mustExec(t, c, session.ExecRequest{Argv: []string{"bash", "-c", "cat " + q + " >/dev/null; read -p 'Continue? [y/n] ' a; echo answer=$a"}})
	r, err := c.Wait(context.Background(), session.WaitRequest{SessionIDs: []string{ask.SessionID}, Until: []string{session.UntilExit}, TimeoutMs: new(int64(0))})
	if err != nil {
		t.Fatal(err)
	}
	if r.SessionID != "" || r.ReturnedBecause != session.BecauseDeadline || len(r.Others) != 1 {
		t.Fatalf("nothing happened yet, got %s", r.Text())
	}
	done := make(chan *session.WaitResult, 1)
	go func() {
		r, err := c.Wait(context.Background(), session.WaitRequest{TimeoutMs: new(int64(60_000))})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	release(t, q)
	r = <-done
	if r == nil {
		return
	}
	if r.SessionID != ask.SessionID || r.ReturnedBecause != session.BecauseWaitingForInput || !strings.Contains(r.Output, "Continue? [y/n] ") {
		t.Fatalf("want waiting_for_input with the question, got:\n%s", r.Text())
	}
	if !strings.Contains(r.Text(), "waits for input") {
		t.Errorf("text lacks the reason:\n%s", r.Text())
	}
}

// TestWaitPattern: wait_for matches new output of any session.
func TestWaitPattern(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	g := fifo(t)
	quiet := mustExec(t, c, session.ExecRequest{Cmd: "sleep 1000"})
	srv := mustExec(t, c, session.ExecRequest{Cmd: "echo starting; cat " + g + " >/dev/null; echo 'ready on port 8123'; sleep 1000"})
	done := make(chan *session.WaitResult, 1)
	go func() {
		r, err := c.Wait(context.Background(), session.WaitRequest{SessionIDs: []string{quiet.SessionID, srv.SessionID},
			WaitFor: `port \d+$`, Until: []string{session.UntilPattern}, TimeoutMs: new(int64(60_000))})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	release(t, g)
	r := <-done
	if r == nil {
		return
	}
	if r.SessionID != srv.SessionID || r.ReturnedBecause != session.BecausePattern || !strings.Contains(r.Output, "ready on port 8123") {
		t.Fatalf("want the pattern of session %s, got:\n%s", srv.SessionID, r.Text())
	}
}

// TestWaitCancel: cancelling the wait ends the call, not the sessions.
func TestWaitCancel(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	s := mustExec(t, c, session.ExecRequest{Cmd: "sleep 1000"})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Wait(ctx, session.WaitRequest{TimeoutMs: new(int64(600_000))})
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait returned %v", err)
	}
	l, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range l.Sessions {
		if i.SessionID == s.SessionID && i.State != session.StateRunning {
			t.Fatalf("the session ended with the wait: %+v", i)
		}
	}
}

// TestWaitArguments: bad arguments are errors a model can act on.
func TestWaitArguments(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	// Nothing to wait for is an answer, not an error.
	if r, err := c.Wait(context.Background(), session.WaitRequest{}); err != nil || r.ReturnedBecause != session.BecauseNoSessions {
		t.Errorf("a wait with no session: %+v, %v", r, err)
	}
	for _, req := range []session.WaitRequest{
		{SessionIDs: []string{"999"}},     // unknown
		{Until: []string{"pattern"}},      // needs wait_for
		{Until: []string{"forever"}},      // unknown event
		{TimeoutMs: new(int64(-1))},       // negative
		{WaitFor: "("},                    // bad regexp
		{SessionIDs: []string{"no-such"}}, // unknown name
	} {
		if _, err := c.Wait(context.Background(), req); !errors.Is(err, session.ErrInvalid) && !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%+v: got %v", req, err)
		}
	}
}

// TestNamedSessions: a name is an id; exec of a running name returns that session; names
// are per client.
func TestNamedSessions(t *testing.T) {
	t.Parallel()
	m, err := session.NewManager(session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	a, b := m.NewClient("a"), m.NewClient("b")
	first := mustExec(t, a, session.ExecRequest{Cmd: "echo first-start; sleep 1000", Name: "dev", WaitFor: "first-start", YieldTimeMs: new(int64(20_000))})
	if first.Name != "dev" || first.Existing {
		t.Fatalf("first: %+v", first)
	}
	// Output printed since: the second exec returns it, from the session that runs.
	if _, err := a.Write(context.Background(), session.WriteRequest{SessionID: "dev", Chars: "typed-line\n", WaitFor: "typed-line"}); err != nil {
		t.Fatal(err)
	}
	again := mustExec(t, a, session.ExecRequest{Cmd: "echo second-start; sleep 1000", Name: "dev"})
	if again.SessionID != first.SessionID || !again.Existing || again.State != session.StateRunning {
		t.Fatalf("second exec of dev started another session: %s", again.Text())
	}
	if !strings.Contains(strings.Join(again.Warnings, "\n"), "already running") {
		t.Errorf("no notice: %v", again.Warnings)
	}
	// Another client's "dev" is its own.
	other := mustExec(t, b, session.ExecRequest{Cmd: "sleep 1000", Name: "dev"})
	if other.SessionID == first.SessionID {
		t.Fatal("client b got client a's dev session")
	}
	for _, c := range []*session.Client{a, b} {
		r, err := c.Read(context.Background(), session.ReadRequest{SessionID: "dev"})
		if err != nil {
			t.Fatal(err)
		}
		want := map[*session.Client]string{a: first.SessionID, b: other.SessionID}[c]
		if r.SessionID != want {
			t.Errorf("read dev: session %s, want %s", r.SessionID, want)
		}
	}
	l, err := a.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	names := 0
	for _, i := range l.Sessions {
		if i.Name == "dev" {
			names++
		}
	}
	if names != 2 {
		t.Errorf("list shows %d sessions named dev, want 2", names)
	}
	k, err := a.Kill(context.Background(), session.KillRequest{SessionID: "dev"})
	if err != nil || k.SessionID != first.SessionID {
		t.Fatalf("kill dev: %+v %v", k, err)
	}
	// Ended: a new exec of the name starts a new session.
	fresh := mustExec(t, a, session.ExecRequest{Cmd: "sleep 1000", Name: "dev"})
	if fresh.SessionID == first.SessionID || fresh.Existing {
		t.Fatalf("exec after kill: %+v", fresh)
	}
	for _, bad := range []string{"12", "has space", strings.Repeat("x", 65), "a:b"} {
		if _, err := a.Exec(context.Background(), session.ExecRequest{Cmd: "true", Name: bad}); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
}

// TestListFacts: the listing says what a session's processes listen on and cost, when
// it last printed, and whether it waits for input — here a dev server (a child of the
// shell, found by its port) and a program at a prompt.
func TestListFacts(t *testing.T) {
	t.Parallel()
	wNeed(t, "python3")
	c := wClient(t)
	srv := mustExec(t, c, session.ExecRequest{Name: "web", YieldTimeMs: new(int64(30_000)),
		Cmd:     `python3 -u -c 'import http.server as h; s = h.HTTPServer(("127.0.0.1", 0), h.SimpleHTTPRequestHandler); print("port", s.server_port); s.serve_forever()'; echo stopped`,
		WaitFor: `^port \d+`})
	if srv.ReturnedBecause != session.BecausePattern {
		t.Fatalf("server did not start: %s", srv.Text())
	}
	var port int
	if _, err := fmt.Sscanf(strings.TrimSpace(srv.Output), "port %d", &port); err != nil {
		t.Fatalf("no port in %q", srv.Output)
	}
	// cat in non-canonical mode: a prompt's shape, which the quiet heuristic requires.
	prompt := mustExec(t, c, session.ExecRequest{Cmd: "stty -icanon; exec cat", YieldTimeMs: new(int64(20_000))})
	l, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range l.Sessions {
		switch i.SessionID {
		case srv.SessionID:
			if len(i.Ports) != 1 || i.Ports[0] != port || i.Name != "web" || i.RSSBytes <= 0 || i.LastOutputAgoMs == nil || i.WaitingForInput {
				t.Errorf("server: %+v, want port %d, name web, memory, last output", i, port)
			}
		case prompt.SessionID:
			if !i.WaitingForInput || len(i.Ports) != 0 || i.LastOutputAgoMs != nil {
				t.Errorf("cat: %+v, want waiting for input, no ports, no output", i)
			}
		}
	}
	if !strings.Contains(l.Text(), fmt.Sprint(port)) || !strings.Contains(l.Text(), "running(input)") {
		t.Errorf("table lacks the port or the waiting session:\n%s", l.Text())
	}
}

// TestCompletionFacts: an ended session's result, its ended_since_last_call entry, its
// wait_sessions result and its listing carry the path of a text log of its whole output,
// the byte and line counts, the sha256 of the raw output, its start and end times and
// its process group; with recording off, the counts and digest still come (from memory).
func TestCompletionFacts(t *testing.T) {
	t.Parallel()
	for _, noRecord := range []bool{false, true} {
		t.Run(fmt.Sprint("norecord=", noRecord), func(t *testing.T) {
			t.Parallel()
			m, err := session.NewManager(session.Options{StateDir: t.TempDir(), NoRecord: noRecord})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close(context.Background()) })
			c := m.NewClient("facts")
			raw := "one\r\n\x1b[1mtwo\x1b[0m\r\nthree"
			r := mustExec(t, c, session.ExecRequest{Argv: []string{"printf", `one\n\033[1mtwo\033[0m\nthree`}, YieldTimeMs: new(int64(30_000))})
			if r.State != session.StateExited || r.Completion == nil {
				t.Fatalf("no completion facts: %s", r.Text())
			}
			sum := sha256.Sum256([]byte(raw))
			f := r.Completion
			if f.OutputBytes != int64(len(raw)) || f.OutputLines != 3 || f.OutputSHA256 != hex.EncodeToString(sum[:]) || f.ProcessGroup <= 0 {
				t.Errorf("facts %+v, want %d bytes, 3 lines, sha256 %x", f, len(raw), sum)
			}
			start, err1 := time.Parse(time.RFC3339Nano, f.StartedAt)
			end, err2 := time.Parse(time.RFC3339Nano, f.EndedAt)
			if err1 != nil || err2 != nil || end.Before(start) {
				t.Errorf("times %q %q", f.StartedAt, f.EndedAt)
			}
			if noRecord {
				if f.LogPath != "" {
					t.Errorf("log path %q without recording", f.LogPath)
				}
			} else {
				// The exec result carries the whole output, so it does not wait for the log:
				// it names the log only if it is already whole. wait_sessions on the ended
				// session always names it.
				if f.LogPath != "" {
					if b, err := os.ReadFile(f.LogPath); err != nil || string(b) != "one\ntwo\nthree\n" {
						t.Errorf("exec named log %s: %q %v", f.LogPath, b, err)
					}
				}
				w, err := c.Wait(context.Background(), session.WaitRequest{SessionIDs: []string{r.SessionID}, TimeoutMs: new(int64(60_000))})
				if err != nil {
					t.Fatal(err)
				}
				if w.Completion == nil || w.Completion.LogPath == "" {
					t.Fatalf("wait_sessions on the ended session names no log: %s", w.Text())
				}
				if b, err := os.ReadFile(w.Completion.LogPath); err != nil || string(b) != "one\ntwo\nthree\n" {
					t.Errorf("log %s: %q %v", w.Completion.LogPath, b, err)
				}
				if !strings.Contains(w.Text(), "Full output log: "+w.Completion.LogPath+" (3 lines") {
					t.Errorf("text lacks the log:\n%s", w.Text())
				}
			}
			// Told in another call's ended_since_last_call, and in the listing.
			g := fifo(t)
			bg := mustExec(t, c, session.ExecRequest{Cmd: "cat '" + g + "' >/dev/null; echo bg-done"})
			done := make(chan *session.WaitResult, 1)
			go func() {
				w, _ := c.Wait(context.Background(), session.WaitRequest{SessionIDs: []string{bg.SessionID}, Until: []string{"exit"}, TimeoutMs: new(int64(60_000))})
				done <- w
			}()
			release(t, g)
			w := <-done
			if w == nil || w.Completion == nil || w.Completion.OutputLines != 1 {
				t.Fatalf("wait result without facts: %+v", w)
			}
			l, err := c.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range l.Sessions {
				if i.Completion == nil || i.Completion.OutputSHA256 == "" {
					t.Errorf("listing of %s lacks completion facts: %+v", i.SessionID, i)
				}
			}
		})
	}
}

// TestCompletionEndedNotice: a session that ended in the background is reported in the
// next call's ended_since_last_call with its facts.
func TestCompletionEndedNotice(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	g := fifo(t)
	bg := mustExec(t, c, session.ExecRequest{Cmd: "cat '" + g + "' >/dev/null; echo bg-done"})
	fg := mustExec(t, c, session.ExecRequest{Argv: []string{"sleep", "1000"}})
	// Blocks until bg's cat has the fifo open, then lets it end (one reader only: two
	// readers of one fifo could leave one of them waiting for ever).
	release(t, g)
	for {
		r, err := c.Write(context.Background(), session.WriteRequest{SessionID: fg.SessionID, YieldTimeMs: new(int64(200))})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.EndedSinceLastCall {
			if e.SessionID == bg.SessionID {
				if e.Completion == nil || e.LogPath == "" || e.OutputLines != 1 {
					t.Fatalf("ended notice without facts: %+v", e)
				}
				return
			}
		}
	}
}
