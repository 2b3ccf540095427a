package ptyhub_test

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// TestShellForHumans: `ptyhub shell` starts the user's $SHELL integrated, attached to
// their terminal; what they run there is in the listing (directory, last command and
// its exit code) for their agent, which can also type a command and get only its
// output and exit code; ctrl-] detaches and `ptyhub shell --name` attaches again.
func TestShellForHumans(t *testing.T) {
	t.Parallel()
	bash := testtool.Path(t, "bash")
	h := svNew(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("PS1='my-prompt$ '\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h = h.inDir(h.dir, "HOME="+home, "SHELL="+bash)
	tm := h.terminal(24, 100, true, "shell", "--name", "mine")
	// The first prompt comes either as bash printed it or, when the attach came after
	// it, in the screen's repaint, which draws the trailing space as a cursor move.
	off := tm.waitFor(0, "my-prompt$")
	tm.typ("cd " + home + " && ls no-such-file\r")
	off = tm.waitFor(off, "No such file")
	off = tm.waitFor(off, "my-prompt$ ")

	var l session.ListResult
	if err := json.Unmarshal([]byte(h.ok("ls", "--json")), &l); err != nil || len(l.Sessions) != 1 {
		t.Fatalf("ls: %v %+v", err, l)
	}
	st := l.Sessions[0].Shell
	if st == nil || st.Cwd != home || st.LastCommand != "cd "+home+" && ls no-such-file" || st.LastExitCode == nil || *st.LastExitCode != 2 {
		t.Fatalf("listing of the human's shell: %+v", st)
	}
	if out := h.ok("ls"); !strings.Contains(out, "(last: cd ") || !strings.Contains(out, filepath.Base(home)) {
		t.Errorf("ptyhub ls shows no CWD or last command:\n%s", out)
	}
	if scr := h.ok("screen", "mine"); strings.Contains(scr, "133;") || !strings.Contains(scr, "my-prompt$ ") {
		t.Errorf("the screen view: %q", scr)
	}

	// The agent's turn, while the human is attached.
	var r session.Result
	if err := json.Unmarshal([]byte(h.ok("write", "mine", "--json", "echo from-agent; exit 3 | true\n")), &r); err != nil {
		t.Fatal(err)
	}
	if r.Shell == nil || r.Shell.ExitCode == nil || *r.Shell.ExitCode != 0 || r.Shell.Command != "echo from-agent; exit 3 | true" || !strings.HasSuffix(r.Output, "from-agent\n") || r.WaitDetection != session.WaitShell {
		t.Fatalf("agent's command: %s (%s), shell %+v, output %q", r.ReturnedBecause, r.WaitDetection, r.Shell, r.Output)
	}
	off = tm.waitFor(off, "from-agent")

	tm.typ("\x1d") // ctrl-]
	if code := tm.wait(); code != 0 {
		t.Errorf("ptyhub shell: status %d after detach", code)
	}
	tm.waitFor(off, "detached from session")
	tm.sane()

	tm2 := h.terminal(24, 100, true, "shell", "--name", "mine")
	off = tm2.waitFor(0, "from-agent") // the same session, repainted
	tm2.typ("exit\r")
	if code := tm2.wait(); code != 0 {
		t.Errorf("ptyhub shell: status %d after exit", code)
	}
	tm2.waitFor(off, "exited with code 0")
}

// TestMCPShellIntegration: an agent on the official TypeScript MCP client keeps one bash
// for a task through `ptyhub mcp`: each command line returns its own output and a shell
// object (exit code, directory, command), state persists between commands,
// list_sessions shows the shell's state, and shell_integration: false starts a bash as
// it is.
func TestMCPShellIntegration(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "bash")
	node := testtool.Path(t, "node") // Node.js 18 or later runs the TypeScript MCP client
	dir := e2eClientDir(t)
	bin := e2eBuildPtyhub(t)
	sv := svNew(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("alias ll='echo ll-alias'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(sv.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	type call struct {
		Step string         `json:"step"`
		Tool string         `json:"tool"`
		Args map[string]any `json:"args"`
	}
	write := func(step, chars string) call {
		return call{step, "write_stdin", map[string]any{"session_id": "work", "chars": chars}}
	}
	calls := []call{
		{"start", "exec_command", map[string]any{"cmd": "bash", "name": "work", "yield_time_ms": 20000}},
		write("cd", "cd sub && export STAGE=test\n"),
		write("env", "echo \"$STAGE $PWD\"; ll\n"),
		write("fail", "ls no-such-file\n"),
		{"list", "list_sessions", map[string]any{}},
		{"plain", "exec_command", map[string]any{"cmd": "bash", "name": "plain", "shell_integration": false, "yield_time_ms": 20000}},
	}
	spec := []map[string]any{{"name": "a", "args": []string{"mcp"}, "cwd": sv.dir,
		"env": map[string]string{"PTYHUB_SOCKET": sv.socket, "XDG_STATE_HOME": filepath.Join(filepath.Dir(sv.dir), "state"),
			"PWD": sv.dir, "HOME": home, "PATH": os.Getenv("PATH")},
		"calls": calls}}
	js, _ := json.Marshal(spec)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, filepath.Join(dir, "callers.mjs"), bin, string(js))
	cmd.Dir = dir
	cmd.Env = sv.env
	lines, _, _ := e2eRunClient(t, cmd, "callers.mjs")
	type shellCmd struct {
		Command  string   `json:"command"`
		ExitCode *int     `json:"exit_code"`
		Cwd      string   `json:"cwd"`
		Duration *float64 `json:"duration_ms"`
	}
	type result struct {
		Step, Text, Error string
		IsError           bool
		Structured        struct {
			Output          string    `json:"output"`
			ReturnedBecause string    `json:"returned_because"`
			WaitDetection   string    `json:"wait_detection"`
			Shell           *shellCmd `json:"shell"`
			Sessions        []struct {
				Name  string              `json:"name"`
				Shell *session.ShellState `json:"shell"`
			} `json:"sessions"`
		}
	}
	got := map[string]result{}
	for _, line := range lines {
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("client printed %q: %v", line, err)
		}
		if r.Error != "" || r.IsError {
			t.Errorf("%s failed: %s%s", r.Step, r.Error, r.Text)
		}
		got[r.Step] = r
	}
	if s := got["start"].Structured; s.ReturnedBecause != "waiting_for_input" || s.WaitDetection != "shell" {
		t.Errorf("start: %+v", s)
	}
	check := func(step, output, command string, code int, cwd string) {
		t.Helper()
		s := got[step].Structured
		if s.Shell == nil || s.Shell.ExitCode == nil || s.Shell.Duration == nil {
			t.Errorf("%s: no shell object: %+v", step, s)
			return
		}
		if s.Output != output || s.Shell.Command != command || *s.Shell.ExitCode != code || s.Shell.Cwd != cwd || s.WaitDetection != "shell" {
			t.Errorf("%s: output %q shell %+v (%s), want %q, %q, %d, %s", step, s.Output, *s.Shell, s.WaitDetection, output, command, code, cwd)
		}
		if !strings.Contains(got[step].Text, "Shell command exited with code") {
			t.Errorf("%s: the text does not tell the command's end:\n%s", step, got[step].Text)
		}
	}
	check("cd", "", "cd sub && export STAGE=test", 0, sub)
	check("env", "test "+sub+"\nll-alias\n", `echo "$STAGE $PWD"; ll`, 0, sub)
	check("fail", "ls: cannot access 'no-such-file': No such file or directory\n", "ls no-such-file", 2, sub)
	var work, plain *session.ShellState
	seen := 0
	for _, s := range got["list"].Structured.Sessions {
		if s.Name == "work" {
			work, seen = s.Shell, seen+1
		}
	}
	if seen != 1 || work == nil || work.Cwd != sub || work.LastCommand != "ls no-such-file" || work.LastExitCode == nil || *work.LastExitCode != 2 || work.Command != "" {
		t.Errorf("list_sessions: the shell's state %+v", work)
	}
	if s := got["plain"].Structured; s.WaitDetection == "shell" || s.Shell != nil || plain != nil {
		t.Errorf("shell_integration false: %+v", s)
	}
}
