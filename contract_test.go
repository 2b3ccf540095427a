package ptyhub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// TestPipeControlKeys: on a pipe session (tty false) ^C and ^\ signal the process group
// and ^D closes stdin, as a terminal's line discipline would; the bytes are not written.
func TestPipeControlKeys(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	off := new(false)
	t.Run("ctrl-c", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, YieldTimeMs: ms(10000), WaitFor: "READY",
			Argv: []string{"python3", "-u", "-c", "import time\ntry:\n    print('READY')\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('INTERRUPTED')\n"}})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\u0003", YieldTimeMs: ms(10000)})
		out, r := untilExit(t, c, r)
		if !strings.Contains(out, "INTERRUPTED") || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("^C on pipes: output %q, exit %v %q", out, r.ExitCode, r.Signal)
		}
	})
	t.Run("keys C-c", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, Cmd: "sleep 60", YieldTimeMs: ms(0)})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Keys: []string{"C-c"}, YieldTimeMs: ms(10000)})
		_, r = untilExit(t, c, r)
		if r.Signal != "SIGINT" {
			t.Errorf("keys C-c on pipes: exit %v %q, want SIGINT", r.ExitCode, r.Signal)
		}
	})
	t.Run("ctrl-backslash", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, Cmd: "sleep 60", YieldTimeMs: ms(0)})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\u001c", YieldTimeMs: ms(10000)})
		_, r = untilExit(t, c, r)
		if r.Signal != "SIGQUIT" {
			t.Errorf("^\\ on pipes: exit %v %q, want SIGQUIT", r.ExitCode, r.Signal)
		}
	})
	t.Run("ctrl-d", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, Cmd: "wc -c", YieldTimeMs: ms(0)})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "abc\u0004", YieldTimeMs: ms(10000)})
		out, r := untilExit(t, c, r)
		if strings.TrimSpace(out) != "3" || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("^D on pipes: output %q, exit %v %q; want 3 bytes counted and exit 0", out, r.ExitCode, r.Signal)
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

	r = exec(t, c, session.ExecRequest{Cmd: "exec sleep 60", YieldTimeMs: ms(0)})
	if _, err := c.Kill(context.Background(), session.KillRequest{SessionID: r.SessionID}); err != nil {
		t.Fatal(err)
	}
	refused("ended by kill_session", c, r.SessionID)

	for _, sig := range []string{"TERM", "KILL"} {
		for _, tty := range []bool{true, false} {
			r = exec(t, c, session.ExecRequest{Argv: []string{"sleep", "60"}, TTY: &tty, YieldTimeMs: ms(0)})
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
		Env: map[string]string{"PS1": "$ "}, YieldTimeMs: ms(10000)})
	if r.ReturnedBecause != session.BecauseWaitingForInput {
		t.Fatalf("bash: returned because %s, output %q", r.ReturnedBecause, r.Output)
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "(sleep 1; echo BG$((6*7))DONE) &\n", YieldTimeMs: ms(10000)})
	out := r.Output
	for i := 0; i < 3 && !strings.Contains(out, "BG42DONE"); i++ {
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: ms(10000)})
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
	r := exec(t, c, session.ExecRequest{Cmd: "seq 1 200 | less", YieldTimeMs: ms(10000)})
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
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Keys: []string{"Down"}, YieldTimeMs: ms(10000)})
		if got := top(); got != want {
			t.Fatalf("after %d× Down the top row is %q, want %q", i+1, got, want)
		}
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Keys: []string{"Up"}, YieldTimeMs: ms(10000)})
	if got := top(); got != "2" {
		t.Errorf("after Up the top row is %q, want 2", got)
	}
	write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "q", YieldTimeMs: ms(10000)})
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
			Env: map[string]string{"PS1": "$ "}, YieldTimeMs: ms(10000)})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "sleep 0.2; echo DONE\n", WaitFor: pat, YieldTimeMs: ms(10000)})
		if r.ReturnedBecause != session.BecausePattern || !strings.Contains("\n"+r.Output, "\nDONE") {
			t.Errorf("wait_for %q: returned because %s with %q; want the program's DONE line", pat, r.ReturnedBecause, r.Output)
		}
	}
	// A program that prints what it read: its line is not the echo.
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "cat\n", WaitFor: `^cat$`, YieldTimeMs: ms(300)})
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "hello\n", WaitFor: "^hello$", YieldTimeMs: ms(10000)})
	if r.ReturnedBecause != session.BecausePattern || strings.Count(r.Output, "hello") != 2 {
		t.Errorf("wait_for ^hello$ on cat: returned because %s with %q; want the echo and cat's line", r.ReturnedBecause, r.Output)
	}
	// On pipes there is no echo; ^/$ still anchor at line boundaries.
	r = exec(t, c, session.ExecRequest{Cmd: "echo one; echo DONE; sleep 60", TTY: new(false), WaitFor: "^DONE$", YieldTimeMs: ms(10000)})
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
		r := exec(t, c, session.ExecRequest{Argv: []string{"python3", "-c", script}, YieldTimeMs: ms(10000)})
		if r.ReturnedBecause != session.BecauseExit || !strings.Contains(r.Output, "GOT [1;1R") {
			t.Fatalf("run %d: returned because %s with %q; want the exit after the answer", i, r.ReturnedBecause, r.Output)
		}
	}
}
