package session

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/screen"
)

func scNewClient(t *testing.T) (*Manager, *Client) {
	t.Helper()
	m, err := NewManager(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m, m.NewClient("test")
}

// scUntilExit polls until the session exits and returns all its text output.
func scUntilExit(t *testing.T, c *Client, r *Result) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(r.Output)
	for r.State != StateExited {
		var err error
		if r, err = c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(5000))}); err != nil {
			t.Fatal(err)
		}
		b.WriteString(r.Output)
	}
	return b.String()
}

// scWaitOutput waits (on the hub, not on time) until the session's output contains want.
func scWaitOutput(t *testing.T, s *Session, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		wake := s.hub.Notify()
		data, _ := s.hub.Tail(1 << 20)
		if strings.Contains(string(data), want) {
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			t.Fatalf("no %q in %q", want, data)
		}
	}
}

// TestRepaintRedraws: the repaint of a live session, written to a fresh terminal of the
// same size, shows what the screen view shows, and brings the terminal up to the end.
func TestRepaintRedraws(t *testing.T) {
	t.Parallel()
	m, c := scNewClient(t)
	cases := []struct{ name, cmd string }{
		{"main screen", `printf 'one\r\n\033[1;32mtwo\033[0m\r\n  three'; read -r x`},
		{"alt screen, hidden cursor", `printf '\033[?1049h\033[?25l\033[H\033[2J~\r\n~\033[10;5H\033[7mstatus\033[0m\033[3;2H'; read -r x`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// No pattern: the call returns once bash waits in read with all output drained,
			// so nothing arrives between the repaint and the screen view.
			r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"bash", "-c", tc.cmd}, Rows: 12, Cols: 40, YieldTimeMs: new(int64(60000))})
			if err != nil {
				t.Fatal(err)
			}
			s, err := m.lookup(r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			data, next := s.RepaintAt()
			if next != s.hub.End() {
				t.Errorf("repaint brings the client to %d, output ends at %d", next, s.hub.End())
			}
			if !slices.Equal(data, s.Repaint()) {
				t.Errorf("Repaint and RepaintAt differ")
			}
			view, err := c.Read(context.Background(), ReadRequest{SessionID: r.SessionID, View: "screen"})
			if err != nil {
				t.Fatal(err)
			}
			term := screen.NewTerminal(12, 40, nil)
			defer term.Close()
			term.Write(data)
			got := term.Snapshot()
			want := view.Screen
			if !slices.Equal(got.Rows, want.Rows) || got.CursorRow != want.CursorRow ||
				got.CursorCol != want.CursorCol || got.AltScreen != want.AltScreen {
				t.Errorf("repainted %+v\nscreen view %+v", got, want)
			}
			w, err := c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "\n", YieldTimeMs: new(int64(0))})
			if err != nil {
				t.Fatal(err)
			}
			scUntilExit(t, c, w) // from the latest result: it may already report the exit
		})
	}
}

// TestQueriesNotAnsweredWhileAttached: an attached human terminal answers queries itself,
// so ptyhub stays silent (never two answers), and answers again after the detach.
func TestQueriesNotAnsweredWhileAttached(t *testing.T) {
	t.Parallel()
	m, c := scNewClient(t)
	cmd := `ask() { printf "\033[5n"; IFS= read -rs -t1 -dn r; echo "[${r#*[}]"; }; read -r x; ask; read -r y; ask`
	r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"bash", "-c", cmd}, YieldTimeMs: new(int64(0))})
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.Attach(r.SessionID, AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err = c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "go\n", YieldTimeMs: new(int64(0))})
	if err != nil {
		t.Fatal(err)
	}
	// The program waits a second for the answer, then prints what it got.
	s, err := m.lookup(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	scWaitOutput(t, s, "]")
	if data, _ := s.hub.Tail(1 << 20); !strings.Contains(string(data), "[]") {
		t.Errorf("answered while a human was attached: %q", data)
	}
	a.Detach()
	r, err = c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "go\n", YieldTimeMs: new(int64(0))})
	if err != nil {
		t.Fatal(err)
	}
	scWaitOutput(t, s, "[0]")
	if data, _ := s.hub.Tail(1 << 20); strings.Count(string(data), "]") != 2 {
		t.Errorf("output %q", data)
	}
	scUntilExit(t, c, r)
}

// TestScreenViewOfExitedSession: the screen stays readable after the exit, for pipes too.
func TestScreenViewOfExitedSession(t *testing.T) {
	t.Parallel()
	_, c := scNewClient(t)
	for _, tty := range []bool{true, false} {
		r, err := c.Exec(context.Background(), ExecRequest{Cmd: `printf 'a\nb\n'`, TTY: &tty})
		if err != nil {
			t.Fatal(err)
		}
		scUntilExit(t, c, r)
		v, err := c.Read(context.Background(), ReadRequest{SessionID: r.SessionID, View: "screen"})
		if err != nil {
			t.Fatal(err)
		}
		// On pipes there is no output processing: \n alone moves down, not to column 0.
		want := map[bool]string{true: "a\nb", false: "a\n b"}[tty]
		if v.Output != want || v.Screen == nil || len(v.Screen.Rows) != DefaultRows || v.Screen.CursorRow != 2 {
			t.Errorf("tty %v: output %q screen %+v", tty, v.Output, v.Screen)
		}
	}
}

// TestHiddenTextNotShown: text printed concealed (SGR 8), which a human sees as blank,
// reaches the agent neither in the text view nor in the screen view.
func TestHiddenTextNotShown(t *testing.T) {
	t.Parallel()
	_, c := scNewClient(t)
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: `printf 'vis \033[8mHIDDEN\033[0m end\n'`, YieldTimeMs: new(int64(20000))})
	if err != nil {
		t.Fatal(err)
	}
	text := scUntilExit(t, c, r)
	if want := "vis [hidden text] end\n"; !strings.Contains(text, want) || strings.Contains(text, "HIDDEN") {
		t.Errorf("text view %q, want %q", text, want)
	}
	v, err := c.Read(context.Background(), ReadRequest{SessionID: r.SessionID, View: "screen"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "vis [hidden text] end"; v.Screen == nil || v.Screen.Rows[0] != want || strings.Contains(v.Output, "HIDDEN") {
		t.Errorf("screen view %q, want first row %q", v.Output, want)
	}
	raw, err := c.Read(context.Background(), ReadRequest{SessionID: r.SessionID, View: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw.Output, "HIDDEN") {
		t.Errorf("raw view %q lost the bytes", raw.Output)
	}
}

// TestCtrlSDoesNotFreezeAgentSessions: in profile agent a ^S reaches the program as a
// byte; output keeps flowing.
func TestCtrlSDoesNotFreezeAgentSessions(t *testing.T) {
	t.Parallel()
	_, c := scNewClient(t)
	r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"bash", "-c", `IFS= read -r x; printf 'got %q\n' "$x"; for i in 1 2 3; do echo line$i; done`}, YieldTimeMs: new(int64(20000))})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "\u0013ok\n", YieldTimeMs: new(int64(20000)), WaitFor: "line3"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.Output, `got $'\023ok'`) || !strings.Contains(w.Output, "line3") || w.OutputStopped {
		t.Fatalf("after ^S: %q (stopped %v)", w.Output, w.OutputStopped)
	}
	scUntilExit(t, c, w)
}

// TestCtrlSReportedInPlainProfile: profile plain keeps flow control, so a ^S stops the
// output; the result and the listing say so, and ^Q resumes.
func TestCtrlSReportedInPlainProfile(t *testing.T) {
	t.Parallel()
	_, c := scNewClient(t)
	r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"cat"}, Profile: ProfilePlain, YieldTimeMs: new(int64(20000))})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "\u0013", YieldTimeMs: new(int64(20000))})
	if err != nil {
		t.Fatal(err)
	}
	if !w.OutputStopped || !slices.ContainsFunc(w.Warnings, func(s string) bool { return strings.Contains(s, "output is stopped") }) {
		t.Errorf("after ^S: stopped %v, warnings %q", w.OutputStopped, w.Warnings)
	}
	l, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(l.Sessions, func(i Info) bool { return i.SessionID == r.SessionID }); i < 0 || !l.Sessions[i].OutputStopped {
		t.Errorf("listing does not say the output is stopped: %+v", l.Sessions)
	}
	w, err = c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "\u0011hi\n", YieldTimeMs: new(int64(20000)), WaitFor: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if w.OutputStopped || !strings.Contains(w.Output, "hi") {
		t.Errorf("after ^Q: stopped %v, output %q", w.OutputStopped, w.Output)
	}
	if _, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID}); err != nil {
		t.Fatal(err)
	}
}

// TestTypeaheadPasswordNotEchoed: a password sent before the program turned echo off
// (here: stdin given with the command, while it still sleeps) is held until the program
// reads, so it is neither echoed into the output nor recorded as visible input.
func TestTypeaheadPasswordNotEchoed(t *testing.T) {
	t.Parallel()
	testtool.KernelOnly(t, "holding typeahead until the program reads the terminal needs /proc wait channels")
	state := t.TempDir()
	m, err := NewManager(Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	r, err := c.Exec(context.Background(), ExecRequest{
		Argv:        []string{"bash", "-c", `sleep 0.3; IFS= read -rs -p 'Password: ' pw; echo; echo "got ${#pw}"; IFS= read -r x; echo "x=$x"`},
		Stdin:       "hunter2\nvisible\n",
		YieldTimeMs: new(int64(20000)), WaitFor: "x=",
	})
	if err != nil {
		t.Fatal(err)
	}
	out := r.Output + scUntilExit(t, c, r)
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "got 7") || !strings.Contains(out, "x=visible") {
		t.Errorf("output %q", out)
	}
	path, err := m.TranscriptPath(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	m.Close(context.Background()) // finishes the transcript
	cast, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(cast, []byte("hunter2")) {
		t.Errorf("the password is in the transcript:\n%s", cast)
	}
}

// TestTypeaheadWithInterrupt: input with a ^C is not held for a program that does not
// read: the ^C ends it.
func TestTypeaheadWithInterrupt(t *testing.T) {
	t.Parallel()
	_, c := scNewClient(t)
	r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"sleep", "100"}, YieldTimeMs: new(int64(0))})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "typed ahead\u0003", YieldTimeMs: new(int64(60000))})
	if err != nil {
		t.Fatal(err)
	}
	if w.State != StateExited || w.Signal != "SIGINT" {
		t.Errorf("sleep: %+v, want ended by SIGINT", w)
	}
}

// TestStoppedForegroundReported: a program in the foreground stopped by SIGSTOP (not the
// leader, which the reaper continues) prints nothing; the call that runs to its deadline
// says so.
func TestStoppedForegroundReported(t *testing.T) {
	t.Parallel()
	_, c := scNewClient(t)
	r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"bash", "-c", `python3 -c 'import os, signal; print("stopping", flush=True); os.kill(os.getpid(), signal.SIGSTOP)'; echo after`}, WaitFor: "stopping", YieldTimeMs: new(int64(20000))})
	if err != nil {
		t.Fatal(err)
	}
	// The stop follows the print: poll (each call runs to its short deadline) until the
	// warning comes, bounded.
	for i := 0; ; i++ {
		w, err := c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(300))})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(w.Warnings, func(s string) bool { return strings.Contains(s, "is stopped") && strings.Contains(s, "python3") }) {
			break
		}
		if w.State != StateRunning || i == 100 {
			t.Fatalf("no stopped warning: %+v", w)
		}
	}
	if _, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID}); err != nil {
		t.Fatal(err)
	}
}
