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
		Env:         map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "HISTFILE": filepath.Join(home, ".hist")},
		YieldTimeMs: new(int64(20000))})
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
	t.Parallel()
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			t.Parallel()
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
			if r.Shell.Command != "echo $FOO; pwd" {
				t.Fatalf("command %q", r.Shell.Command)
			}
			if r.Output != "bar\n"+sub+"\n" {
				t.Fatalf("output %q", r.Output)
			}
			if sh != "fish" {
				// Two command lines in one write: the call returns after the second,
				// with the output of both. (fish reads all typed input at once, so
				// the terminal cannot tell that more is to come.)
				r = run(t, c, id, "echo one\necho two\n")
				ended(t, r, "echo two", 0)
				if r.Output != "one\ntwo\n" || r.Shell.Command != "echo two" {
					t.Fatalf("two lines: output %q, shell %+v", r.Output, r.Shell)
				}
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
			// The marks are in the raw output only: never in the text or screen views.
			for _, view := range []string{"raw", "text", "screen"} {
				rr, err := c.Read(context.Background(), session.ReadRequest{SessionID: id, View: view})
				if err != nil {
					t.Fatal(err)
				}
				text := rr.Output
				if rr.Screen != nil {
					text = strings.Join(rr.Screen.Rows, "\n")
				}
				if marks := strings.Contains(text, "133;") || strings.Contains(text, "file://"); marks != (view == "raw") {
					t.Errorf("view %s: marks present %v: %q", view, marks, text)
				}
			}
		})
	}
}

// TestShellInteractive: Ctrl-C ends a command with 130; a multi-line command, a heredoc
// and a REPL run from the shell are each one command; output that looks like a prompt
// is the command's output all the same.
func TestShellInteractive(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "python3")
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			t.Parallel()
			c, id, _ := shellSession(t, sh, nil)
			// A command that waits: the write returns at the yield, the command running.
			// (In the portable build a silent program looks like a prompt after a
			// while: the quiet heuristic may return first; the shell still says which
			// command runs.)
			r, err := c.Write(context.Background(), session.WriteRequest{SessionID: id, Chars: "sleep 100\n", YieldTimeMs: new(int64(3000))})
			if err != nil {
				t.Fatal(err)
			}
			quiet := testtool.Portable && r.WaitDetection == "quiet"
			if r.Shell == nil || !r.Shell.Running || r.Shell.Command != "sleep 100" || r.ReturnedBecause != session.BecauseDeadline && !quiet {
				t.Fatalf("sleep: %s, shell %+v", r.ReturnedBecause, r.Shell)
			}
			r = run(t, c, id, "\x03")
			ended(t, r, "^C", 130)
			if r.Shell.Command != "sleep 100" {
				t.Fatalf("^C ended %q", r.Shell.Command)
			}
			multi := "for i in 1 2 3\ndo\necho line $i\ndone\n"
			if sh == "fish" {
				multi = "for i in 1 2 3\necho line $i\nend\n"
			}
			r = run(t, c, id, multi)
			ended(t, r, "for", 0)
			if r.Output != "line 1\nline 2\nline 3\n" {
				t.Fatalf("multi-line: output %q", r.Output)
			}
			if sh != "fish" {
				r = run(t, c, id, "cat <<'EOF'\n$ not a prompt\nuser@host:~$ ls\nEOF\n")
				ended(t, r, "heredoc", 0)
				if r.Output != "$ not a prompt\nuser@host:~$ ls\n" {
					t.Fatalf("heredoc: output %q", r.Output)
				}
			}
			r = run(t, c, id, "printf '%s\\n' 'root@vm:~# ' '> ' '$ ' 'ok'\n")
			ended(t, r, "printf", 0)
			if r.Output != "root@vm:~# \n> \n$ \nok\n" {
				t.Fatalf("prompt-like output: %q", r.Output)
			}
			// A REPL: the command waits for input inside python, then returns to the shell.
			// (A long yield: python3 may be a slow pyenv shim on a loaded machine.)
			r, err = c.Write(context.Background(), session.WriteRequest{SessionID: id, Chars: "python3 -q\n", YieldTimeMs: new(int64(60000))})
			if err != nil {
				t.Fatal(err)
			}
			if testtool.Portable {
				// Without the kernel's view only the shell's own prompt is an exact wait:
				// python's is left to the general detection, which may take longer.
				r, err = c.Write(context.Background(), session.WriteRequest{SessionID: id, Chars: "import sys; sys.exit(5)\n", YieldTimeMs: new(int64(10000))})
				if err != nil {
					t.Fatal(err)
				}
				ended(t, r, "python3", 5)
				return
			}
			if r.ReturnedBecause != session.BecauseWaitingForInput || r.WaitDetection == session.WaitShell || r.Shell == nil || !r.Shell.Running {
				t.Fatalf("python3: %s (%s), shell %+v, output %q", r.ReturnedBecause, r.WaitDetection, r.Shell, r.Output)
			}
			r = run(t, c, id, "print(6*7)\n")
			if !strings.Contains(r.Output, "42") || r.ReturnedBecause != session.BecauseWaitingForInput {
				t.Fatalf("python3 print: %s, output %q", r.ReturnedBecause, r.Output)
			}
			// Input for the REPL is typed into a running program: the default yield is
			// write_stdin's short one, so this call asks for a longer one.
			r, err = c.Write(context.Background(), session.WriteRequest{SessionID: id, Chars: "import sys; sys.exit(5)\n", YieldTimeMs: new(int64(10000))})
			if err != nil {
				t.Fatal(err)
			}
			ended(t, r, "python3", 5)
			if r.Shell.Command != "python3 -q" {
				t.Fatalf("REPL's command %q", r.Shell.Command)
			}
		})
	}
}

// TestShellUserRC: the user's own rc still runs with its prompt hooks (PROMPT_COMMAND,
// precmd, fish_prompt) seeing the last status, aliases work, and set -e and set -u in
// the rc do not break the hooks.
func TestShellUserRC(t *testing.T) {
	t.Parallel()
	rcs := map[string]map[string]string{
		"bash": {".bashrc": "set -eu\nalias hi='echo alias-ran'\nPROMPT_COMMAND='echo \"user-pc $?\" >> ~/pc.log'\nPS1='mine> '\n"},
		"zsh":  {".zshrc": "set -eu\nalias hi='echo alias-ran'\nprecmd() { echo \"user-pc $?\" >> ~/pc.log }\nPS1='mine> '\n"},
		"fish": {".config/fish/config.fish": "alias hi 'echo alias-ran'\nfunction fish_prompt\n    echo \"user-pc $status\" >> ~/pc.log\n    printf 'mine> '\nend\n"},
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			t.Parallel()
			c, id, home := shellSession(t, sh, rcs[sh])
			r := run(t, c, id, "hi\n")
			ended(t, r, "hi", 0)
			if r.Output != "alias-ran\n" {
				t.Fatalf("alias: output %q", r.Output)
			}
			r = run(t, c, id, "sh -c 'exit 4' || true\n")
			ended(t, r, "status", 0)
			r = run(t, c, id, "cat ~/pc.log\n")
			ended(t, r, "cat", 0)
			if want := "user-pc 0\nuser-pc 0\nuser-pc 0\n"; r.Output != want {
				t.Fatalf("the user's prompt hook: %q, want %q", r.Output, want)
			}
			r = run(t, c, id, "sh -c 'exit 4'; echo ran\n")
			if sh == "bash" || sh == "zsh" {
				// set -e: the failing command ends the shell, as it would without ptyhub.
				if r.State != session.StateExited {
					t.Fatalf("set -e: the shell is %s after a failing command, output %q", r.State, r.Output)
				}
				return
			}
			ended(t, r, "sh", 0)
			r = run(t, c, id, "sh -c 'exit 4'\n")
			ended(t, r, "sh", 4)
			r = run(t, c, id, "tail -n 1 ~/pc.log\n")
			if r.Output != "user-pc 4\n" {
				t.Fatalf("the user's prompt did not see the status: %q", r.Output)
			}
			_ = home
		})
	}
}

// TestShellUserHooks: a zsh whose .zshenv moves ZDOTDIR reads its .zshrc from there,
// with its add-zsh-hook precmd seeing the status and ZDOTDIR left as the user set it;
// a bash whose PROMPT_COMMAND is an array keeps every element, each seeing the status.
func TestShellUserHooks(t *testing.T) {
	t.Parallel()
	t.Run("zsh", func(t *testing.T) {
		t.Parallel()
		c, id, home := shellSession(t, "zsh", map[string]string{
			".zshenv":   "export ZDOTDIR=$HOME/zd\n",
			"zd/.zshrc": "autoload -Uz add-zsh-hook\nmine() { echo \"hook $?\" >> ~/h.log }\nadd-zsh-hook precmd mine\nalias zz='echo zz-alias'\n"})
		ended(t, run(t, c, id, "sh -c 'exit 6'\n"), "exit 6", 6)
		r := run(t, c, id, "zz; cat ~/h.log; echo $ZDOTDIR; env | grep -c PTYHUB_ZDOTDIR\n")
		if want := "zz-alias\nhook 0\nhook 6\n" + home + "/zd\n0\n"; r.Output != want {
			t.Fatalf("output %q, want %q", r.Output, want)
		}
	})
	t.Run("bash", func(t *testing.T) {
		t.Parallel()
		c, id, _ := shellSession(t, "bash", map[string]string{
			".bashrc": "PROMPT_COMMAND=('echo \"pc1 $?\" >> ~/h.log' 'echo pc2 >> ~/h.log')\n"})
		ended(t, run(t, c, id, "sh -c 'exit 6'\n"), "exit 6", 6)
		r := run(t, c, id, "cat ~/h.log; env | grep -c ZDOTDIR\n")
		if want := "pc1 0\npc2\npc1 6\npc2\n0\n"; r.Output != want {
			t.Fatalf("output %q, want %q", r.Output, want)
		}
	})
}
