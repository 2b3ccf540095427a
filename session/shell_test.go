package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// Tests of shell integration with the real bash, zsh and fish, each started with a
// temporary HOME holding the user's rc files.

// shellSession starts shell (bash, zsh or fish) integrated, with files written into a
// fresh HOME first (name → content), and returns the client, the session's id and HOME.
func shellSession(t *testing.T, shell string, files map[string]string) (*session.Client, string, string) {
	t.Helper()
	testtool.Need(t, shell)
	home := t.TempDir()
	for name, content := range files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m, err := session.NewManager(session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c := m.NewClient("test")
	r, err := c.Exec(context.Background(), session.ExecRequest{Cmd: shell, Workdir: home,
		Env: map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "HISTFILE": filepath.Join(home, ".hist")},
		YieldTimeMs: wMs(20000)})
	if err != nil {
		t.Fatal(err)
	}
	if r.ReturnedBecause != session.BecauseWaitingForInput || r.WaitDetection != session.WaitShell {
		t.Fatalf("%s did not come to its prompt: %s (%s), output %q", shell, r.ReturnedBecause, r.WaitDetection, r.Output)
	}
	return c, r.SessionID, home
}

// run types line into the shell and returns the result, which must be the command's end.
func run(t *testing.T, c *session.Client, id, line string) *session.Result {
	t.Helper()
	r, err := c.Write(context.Background(), session.WriteRequest{SessionID: id, Chars: line})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ended(t *testing.T, r *session.Result, line string, code int) {
	t.Helper()
	if r.Shell == nil || r.Shell.ExitCode == nil {
		t.Fatalf("%q: no command end in the result: %s, shell %+v, output %q", line, r.ReturnedBecause, r.Shell, r.Output)
	}
	if *r.Shell.ExitCode != code {
		t.Fatalf("%q: exit code %d, want %d (output %q)", line, *r.Shell.ExitCode, code, r.Output)
	}
	if r.ReturnedBecause != session.BecauseWaitingForInput || r.WaitDetection != session.WaitShell {
		t.Fatalf("%q: returned because %s (%s), want waiting_for_input (shell)", line, r.ReturnedBecause, r.WaitDetection)
	}
}

func TestShellCommands(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			c, id, home := shellSession(t, sh, nil)
			r := run(t, c, id, "echo hello\n")
			ended(t, r, "echo hello", 0)
			if r.Output != "hello\n" || r.Shell.Command != "echo hello" || r.Shell.Cwd != home {
				t.Fatalf("echo hello: output %q, shell %+v", r.Output, r.Shell)
			}
			for _, tc := range []struct {
				line string
				code int
			}{{"false", 1}, {"sh -c 'exit 3'", 3}, {"no-such-command-xyz", 127}} {
				r := run(t, c, id, tc.line+"\n")
				ended(t, r, tc.line, tc.code)
				if r.Shell.Command != tc.line {
					t.Errorf("command %q, want %q", r.Shell.Command, tc.line)
				}
			}
			sub := filepath.Join(home, "a b")
			os.Mkdir(sub, 0o700)
			r = run(t, c, id, "cd 'a b'\n")
			ended(t, r, "cd", 0)
			if r.Shell.Cwd != sub {
				t.Fatalf("cwd after cd %q, want %q", r.Shell.Cwd, sub)
			}
			if sh == "fish" {
				r = run(t, c, id, "set -x FOO bar\n")
			} else {
				r = run(t, c, id, "export FOO=bar\n")
			}
			ended(t, r, "export", 0)
			r = run(t, c, id, "echo $FOO; pwd\n")
			ended(t, r, "echo", 0)
			if r.Output != "bar\n"+sub+"\n" {
				t.Fatalf("output %q", r.Output)
			}
			r = run(t, c, id, "printf 'no newline'\n")
			ended(t, r, "printf", 0)
			if r.Output != "no newline" {
				t.Fatalf("printf: output %q", r.Output)
			}
			l, err := c.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			st := l.Sessions[0].Shell
			if st == nil || st.Cwd != sub || st.Command != "" || st.LastCommand != "printf 'no newline'" || st.LastExitCode == nil || *st.LastExitCode != 0 {
				t.Fatalf("listing: %+v", st)
			}
			if strings.Contains(l.Sessions[0].LastLine, "133;") {
				t.Fatalf("a mark in the last line: %q", l.Sessions[0].LastLine)
			}
		})
	}
}
