package session_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// Tests of the waiting-for-input return: a call returns "waiting_for_input" when the program in the
// terminal's foreground is blocked reading the terminal, and never when it sleeps,
// computes, waits on the network or on a child. Real programs on real ptys; no sleeps
// as synchronisation (sleeps inside the programs only shape what they do).

func wClient(t *testing.T) *session.Client {
	t.Helper()
	m, err := session.NewManager(session.Options{MaxSessions: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m.NewClient("waiting-test")
}

func wNeed(t *testing.T, progs ...string) {
	t.Helper()
	testtool.Need(t, progs...)
}

func wKill(c *session.Client, r *session.Result) {
	if r != nil {
		c.Kill(context.Background(), session.KillRequest{SessionID: r.SessionID, Remove: true})
	}
}

// TestWaitingFires: each program ends up blocked reading the terminal; exec_command must
// come back with waiting_for_input (long before its 20 s yield), with the prompt.
func TestWaitingFires(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	tests := []struct {
		name     string
		req      session.ExecRequest
		need     []string
		prompt   string // the output must contain it
		password bool
		// kernel: the program reads the terminal without a prompt's shape (canonical
		// mode, echo on, no unterminated line), which only the kernel's view tells
		// from a silent sleep.
		kernel bool
	}{
		{name: "cat", req: session.ExecRequest{Argv: []string{"cat"}}, kernel: true},
		{name: "bash-i", req: session.ExecRequest{Argv: []string{"bash", "--norc", "--noprofile", "-i"}, Env: map[string]string{"PS1": "PROMPT$ "}}, prompt: "PROMPT$ "},
		{name: "python3", req: session.ExecRequest{Argv: []string{"python3", "-q"}}, need: []string{"python3"}, prompt: ">>> "},
		{name: "node", req: session.ExecRequest{Argv: []string{"node"}}, need: []string{"node"}, prompt: "> "},
		{name: "read-s", req: session.ExecRequest{Cmd: `read -s -p "Password: " x; echo got`}, prompt: "Password: ", password: true},
		{name: "getpass", req: session.ExecRequest{Argv: []string{"python3", "-c", "import getpass; print(getpass.getpass())"}}, need: []string{"python3"}, prompt: "Password: ", password: true},
		{name: "yes-no", req: session.ExecRequest{Cmd: `read -p "Continue? [y/n] " a; echo "answer=$a"`}, prompt: "Continue? [y/n] "},
		{name: "pager", req: session.ExecRequest{Cmd: "seq 1000 | less"}, need: []string{"less"}, prompt: "1\n2\n3\n"},
		{name: "after-sleep", req: session.ExecRequest{Cmd: "sleep 0.2; echo ready; cat"}, prompt: "ready", kernel: true},
		{name: "after-sleep-prompt", req: session.ExecRequest{Cmd: "sleep 0.2; printf 'ready> '; cat"}, prompt: "ready> "},
		{name: "shell-waits-on-reader", req: session.ExecRequest{Cmd: "cat; echo after"}, kernel: true},
		{name: "multithreaded", req: session.ExecRequest{Argv: []string{"python3", "-c",
			"import threading,time\nthreading.Thread(target=lambda: time.sleep(60), daemon=True).start()\nprint('in:', input('name? '))"}},
			need: []string{"python3"}, prompt: "name? "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wNeed(t, tc.need...)
			if tc.kernel {
				testtool.KernelOnly(t, "a read without a prompt's shape is told from a silent sleep by wait channels only")
			}
			for i := range 3 {
				req := tc.req
				req.YieldTimeMs = new(int64(20_000))
				r, err := c.Exec(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				wKill(c, r)
				if r.ReturnedBecause != session.BecauseWaitingForInput {
					t.Fatalf("run %d: returned because %q after %.1f ms, want waiting_for_input; output %q", i, r.ReturnedBecause, r.WallTimeMs, r.Output)
				}
				if testtool.Portable {
					// Without wait channels only the heuristic can fire.
					if r.WaitDetection != "quiet" {
						t.Errorf("run %d: wait_detection %q, want quiet (portable build)", i, r.WaitDetection)
					}
				} else if r.WaitDetection == "" || r.WaitDetection == "quiet" {
					t.Errorf("run %d: wait_detection %q, want a kernel method", i, r.WaitDetection)
				}
				if !strings.Contains(r.Output, tc.prompt) {
					t.Errorf("run %d: output %q lacks %q", i, r.Output, tc.prompt)
				}
				if r.PasswordPrompt != tc.password {
					t.Errorf("run %d: password_prompt %v, want %v", i, r.PasswordPrompt, tc.password)
				}
				if text := r.Text(); tc.password && !strings.Contains(text, "Waiting for input (password prompt)\n") ||
					!tc.password && !strings.Contains(text, "Waiting for input\n") {
					t.Errorf("run %d: text lacks the waiting line:\n%s", i, text)
				}
			}
		})
	}
}

// TestWaitingDoesNotFire: programs that sleep, compute, wait on the network or on a child
// are not waiting for input: the call runs to its deadline (or the exit).
func TestWaitingDoesNotFire(t *testing.T) {
	t.Parallel()
	testtool.KernelOnly(t, "telling sleep, a pipe or a socket read from a terminal read needs /proc wait channels; the quiet heuristic reports them as waiting")
	c := wClient(t)
	noTTY := false
	tests := []struct {
		name string
		req  session.ExecRequest
		need []string
		want string
	}{
		{name: "sleep", req: session.ExecRequest{Cmd: "echo READY; exec sleep 30"}, want: session.BecauseDeadline},
		{name: "busy-loop", req: session.ExecRequest{Cmd: "echo READY; while :; do :; done"}, want: session.BecauseDeadline},
		{name: "socket-accept", req: session.ExecRequest{Argv: []string{"python3", "-c",
			"import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print('READY', flush=True); s.accept()"}}, need: []string{"python3"}, want: session.BecauseDeadline},
		{name: "socket-read", req: session.ExecRequest{Argv: []string{"python3", "-c",
			"import socket; a,b=socket.socketpair(); print('READY', flush=True); a.recv(1)"}}, need: []string{"python3"}, want: session.BecauseDeadline},
		{name: "cat-reads-pipe", req: session.ExecRequest{Cmd: "echo READY; sleep 30 | cat"}, want: session.BecauseDeadline},
		{name: "shell-waits-on-child", req: session.ExecRequest{Cmd: "echo READY; sleep 30; echo"}, want: session.BecauseDeadline},
		{name: "pager-waits-on-pipe", req: session.ExecRequest{Cmd: "echo READY; (sleep 30; seq 10) | less"}, need: []string{"less"}, want: session.BecauseDeadline},
		{name: "no-tty", req: session.ExecRequest{Cmd: "echo READY; exec cat", TTY: &noTTY}, want: session.BecauseDeadline},
		{name: "sleep-then-exit", req: session.ExecRequest{Cmd: "echo READY; sleep 1; echo done"}, want: session.BecauseExit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wNeed(t, tc.need...)
			// Start, and wait for the program to say it is about to enter the state.
			req := tc.req
			req.YieldTimeMs = new(int64(20_000))
			req.WaitFor = "READY"
			r, err := c.Exec(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			defer wKill(c, r)
			if r.ReturnedBecause != session.BecausePattern {
				t.Fatalf("start: returned because %q, output %q", r.ReturnedBecause, r.Output)
			}
			// Longer than the 500 ms quiet fallback, so a fallback that misfires is caught.
			yield := int64(1500)
			if tc.want == session.BecauseExit {
				yield = 20_000
			}
			r, err = c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(yield))})
			if err != nil {
				t.Fatal(err)
			}
			if r.ReturnedBecause != tc.want {
				t.Fatalf("returned because %q (%s) after %.1f ms, want %q; output %q", r.ReturnedBecause, r.WaitDetection, r.WallTimeMs, tc.want, r.Output)
			}
			if tc.want == session.BecauseExit && !strings.Contains(r.Output, "done") {
				t.Errorf("output %q lacks done", r.Output)
			}
		})
	}
}

// TestWaitingQuietFallback: where the kernel cannot tell (the terminal waited on together
// with a socket, as ssh and nc do), waiting_for_input fires after the output has been
// quiet for a while, with wait_detection "quiet".
func TestWaitingQuietFallback(t *testing.T) {
	t.Parallel()
	wNeed(t, "python3")
	c := wClient(t)
	r, err := c.Exec(context.Background(), session.ExecRequest{Argv: []string{"python3", "-c",
		"import select, socket, sys\na, b = socket.socketpair()\nprint('remote> ', end='', flush=True)\nselect.select([sys.stdin, a], [], [])\nprint('got', sys.stdin.readline().strip())"},
		YieldTimeMs: new(int64(20_000))})
	if err != nil {
		t.Fatal(err)
	}
	defer wKill(c, r)
	if r.ReturnedBecause != session.BecauseWaitingForInput || r.WaitDetection != "quiet" || !strings.Contains(r.Output, "remote> ") {
		t.Fatalf("returned because %q (wait_detection %q) after %.1f ms with %q, want waiting_for_input by quiet", r.ReturnedBecause, r.WaitDetection, r.WallTimeMs, r.Output)
	}
	r, err = c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, Chars: "hi\n", YieldTimeMs: new(int64(20_000))})
	if err != nil || r.ReturnedBecause != session.BecauseExit || !strings.Contains(r.Output, "got hi") {
		t.Fatalf("answer: %v, returned because %q with %q", err, r.ReturnedBecause, r.Output)
	}
}

// TestWaitingTurns: write, then return when the program has read the input, answered and
// blocked again — never right after the write, before the program was even woken. With
// echo off nothing is printed before the program answers, so a detector that does not
// check that the input was consumed returns empty output here.
func TestWaitingTurns(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	tests := []struct {
		name   string
		req    session.ExecRequest
		need   []string
		input  func(i int) string
		answer func(i int) string
	}{
		{name: "cat-no-echo", req: session.ExecRequest{Cmd: "stty -echo; cat"},
			input: func(i int) string { return fmt.Sprintf("line%d\n", i) }, answer: func(i int) string { return fmt.Sprintf("line%d\n", i) }},
		{name: "raw-cat-no-echo", req: session.ExecRequest{Cmd: "stty raw -echo; cat"},
			input: func(i int) string { return fmt.Sprintf("k%d.", i) }, answer: func(i int) string { return fmt.Sprintf("k%d.", i) }},
		{name: "python3", req: session.ExecRequest{Argv: []string{"python3", "-q"}}, need: []string{"python3"},
			input: func(i int) string { return fmt.Sprintf("%d+1\n", i) }, answer: func(i int) string { return fmt.Sprintf("\n%d\n>>> ", i+1) }},
		{name: "bash-i", req: session.ExecRequest{Argv: []string{"bash", "--norc", "--noprofile", "-i"}, Env: map[string]string{"PS1": "P$ "}},
			input: func(i int) string { return fmt.Sprintf("echo $((%d*2))\n", i) }, answer: func(i int) string { return fmt.Sprintf("\n%d\n", i*2) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wNeed(t, tc.need...)
			req := tc.req
			req.YieldTimeMs = new(int64(20_000))
			r, err := c.Exec(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			defer wKill(c, r)
			if r.ReturnedBecause != session.BecauseWaitingForInput {
				t.Fatalf("start: returned because %q, output %q", r.ReturnedBecause, r.Output)
			}
			for i := range 20 {
				r, err = c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, Chars: tc.input(i), YieldTimeMs: new(int64(20_000))})
				if err != nil {
					t.Fatal(err)
				}
				if r.ReturnedBecause != session.BecauseWaitingForInput || !strings.Contains(r.Output, tc.answer(i)) {
					r2, _ := c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(1000))})
					t.Logf("DEBUG then: %q %s", r2.Output, r2.ReturnedBecause)
					t.Fatalf("turn %d: returned because %q after %.1f ms with %q, want waiting_for_input with %q", i, r.ReturnedBecause, r.WallTimeMs, r.Output, tc.answer(i))
				}
			}
		})
	}
}

// TestWaitingPasswordThenAnswer: a y/n prompt, answered, ends the program; a password
// prompt is flagged and what is typed at it is not shown.
func TestWaitingPasswordThenAnswer(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	r, err := c.Exec(context.Background(), session.ExecRequest{Cmd: `read -s -p "Password: " pw; echo; read -p "Continue? [y/n] " a; echo "len=${#pw} answer=$a"`, YieldTimeMs: new(int64(20_000))})
	if err != nil {
		t.Fatal(err)
	}
	defer wKill(c, r)
	if r.ReturnedBecause != session.BecauseWaitingForInput || !r.PasswordPrompt {
		t.Fatalf("returned because %q, password %v, output %q", r.ReturnedBecause, r.PasswordPrompt, r.Output)
	}
	r, err = c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, Chars: "hunter2\n", YieldTimeMs: new(int64(20_000))})
	if err != nil {
		t.Fatal(err)
	}
	if r.ReturnedBecause != session.BecauseWaitingForInput || r.PasswordPrompt || !strings.Contains(r.Output, "Continue? [y/n] ") || strings.Contains(r.Output, "hunter2") {
		t.Fatalf("after the password: returned because %q, password %v, output %q", r.ReturnedBecause, r.PasswordPrompt, r.Output)
	}
	r, err = c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, Chars: "y\n", YieldTimeMs: new(int64(20_000))})
	if err != nil {
		t.Fatal(err)
	}
	if r.ReturnedBecause != session.BecauseExit || !strings.Contains(r.Output, "len=7 answer=y") {
		t.Fatalf("after the answer: returned because %q, output %q", r.ReturnedBecause, r.Output)
	}
}
