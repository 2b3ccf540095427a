package ptyhub_test

import (
	"bytes"
	"encoding/json"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"testing"
)

// Tests that the CLI and the tools say what is true, in the words of the interface used:
// through a private per-user server (the CLI) and through `ptyhub mcp` driven by the
// official TypeScript MCP client (testdata/mcpclient/steps.mjs).

// runSteps runs steps with steps.mjs against `ptyhub mcpArgs…` started in sv's project
// directory with sv's environment, and returns the steps by name.
func runSteps(t *testing.T, sv *svHub, mcpArgs []string, steps []map[string]any) map[string]notifyStep {
	t.Helper()
	return stepsOf(t, sv, "steps.mjs", mcpArgs, steps, nil)
}

// field returns a step's structured field as a string ("" when absent).
func (s notifyStep) field(name string) string {
	v, ok := s.Structured[name]
	if !ok || v == nil {
		return ""
	}
	if str, ok := v.(string); ok {
		return str
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestExecNamedRunning: `ptyhub exec --name N --wait-for RE` of a session that already
// runs returns that session and exits 0 when its output matched (earlier, or in output
// that comes during the call), so "start the dev server unless it runs, and wait until
// it is ready" works on every call; exec_command does the same over MCP.
func TestExecNamedRunning(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	fifo := mkfifo(t)
	// ready at once, then "again" once the fifo is written.
	script := `echo ready; cat ` + fifo + `; echo again-ready; exec sleep 600`
	first := h.ok("exec", "--json", "--name", "web", "--wait-for", "ready", "-c", script)
	var r1 struct {
		SessionID       string `json:"session_id"`
		ReturnedBecause string `json:"returned_because"`
	}
	if err := json.Unmarshal([]byte(first), &r1); err != nil || r1.ReturnedBecause != "pattern" {
		t.Fatalf("first exec: %v %s", err, first)
	}
	for i := range 2 {
		out, errs, code := h.run("exec", "--name", "web", "--wait-for", "ready", "-c", script)
		if code != 0 || !strings.Contains(out, "session ID "+r1.SessionID+"\n") || !strings.Contains(out, `already running`) {
			t.Fatalf("exec #%d of the running session: status %d\n%s%s", i+2, code, out, errs)
		}
	}
	// A pattern it has not matched yet is waited for in its new output.
	cmd := osexec.Command(h.bin, "exec", "--name", "web", "--wait-for", "again-ready", "--yield", "2m", "-c", script)
	cmd.Env, cmd.Dir = h.env, h.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "again-ready") {
		t.Fatalf("exec waiting for new output: %v\n%s", err, out.String())
	}

	got := runSteps(t, h, []string{"mcp"}, []map[string]any{
		tool("a", "exec_command", map[string]any{"cmd": "echo up-and-ready; exec sleep 600", "name": "dev", "wait_for": "ready", "yield_time_ms": 60000}),
		tool("b", "exec_command", map[string]any{"cmd": "echo up-and-ready; exec sleep 600", "name": "dev", "wait_for": "ready", "yield_time_ms": 60000}),
	})
	if a, b := got["a"], got["b"]; a.field("returned_because") != "pattern" || b.field("returned_because") != "pattern" ||
		b.field("session_id") != a.field("session_id") || b.field("existing") != "true" {
		t.Errorf("exec_command of the running session named dev:\n%+v\n%+v", a, b)
	}
}

// TestWaitSessionsKnownExits: wait_sessions without ids does not return an exit the
// agent was already told of (by the kill_session that ended the session, or by the
// exec_command or write_stdin that returned it); it waits on the sessions still running,
// and with none it answers plainly that there is nothing to wait for.
func TestWaitSessionsKnownExits(t *testing.T) {
	t.Parallel()
	for _, mode := range [][]string{{"mcp"}, {"mcp", "--embedded"}, {"mcp", "--keep"}} {
		t.Run(strings.Join(mode, "-"), func(t *testing.T) {
			t.Parallel()
			h := svNew(t)
			got := runSteps(t, h, mode, []map[string]any{
				tool("run", "exec_command", map[string]any{"cmd": "exec sleep 600", "yield_time_ms": 0}),
				tool("victim", "exec_command", map[string]any{"cmd": "echo unread; exec sleep 600", "yield_time_ms": 0}),
				tool("kill", "kill_session", map[string]any{"session_id": "$victim"}),
				tool("quick", "exec_command", map[string]any{"cmd": "echo bye; exit 4"}),
				tool("sh", "exec_command", map[string]any{"argv": []string{"sh"}, "yield_time_ms": 0}),
				tool("exit", "write_stdin", map[string]any{"session_id": "$sh", "chars": "exit 5\n", "yield_time_ms": 60000}),
				tool("wait", "wait_sessions", map[string]any{"timeout_ms": 1000}),
				tool("kill2", "kill_session", map[string]any{"session_id": "$run"}),
				tool("none", "wait_sessions", map[string]any{}),
			})
			if got["exit"].field("exit_code") != "5" {
				t.Fatalf("write_stdin exit 5: %+v", got["exit"])
			}
			w := got["wait"]
			if w.IsError || w.field("returned_because") != "deadline" || w.field("session_id") != "" ||
				!strings.Contains(w.Text, got["run"].field("session_id")+": running") {
				t.Errorf("wait_sessions after the exits were reported returned %+v", w)
			}
			n := got["none"]
			if n.IsError || n.field("returned_because") != "no_sessions" || !strings.Contains(n.Text, "Nothing to wait for") {
				t.Errorf("wait_sessions with nothing running: %+v", n)
			}
		})
	}
}

// TestErrorsInTheUsersWords: an invalid argument is named as the user typed it — the
// CLI's flags (--wait-for, --cwd, --timeout, --tail) through the server, the MCP tools'
// arguments (wait_for, workdir, timeout_ms, tail_lines) — and a range error names the
// offsets given, not the clamped ones.
func TestErrorsInTheUsersWords(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	id := strings.TrimSpace(h.ok("exec", "--json", "-c", "printf 'seven!\\n'")) // 8 bytes of output
	var r struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(id), &r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args       []string
		want, flag string // want in stderr; flag: the argument's MCP name, which must not be
	}{
		{[]string{"exec", "--wait-for", "(", "--", "true"}, "ptyhub exec: --wait-for is not a valid regular expression", "wait_for"},
		{[]string{"exec", "--cwd", "no such dir", "--", "true"}, `ptyhub exec: --cwd "no such dir"`, "workdir"},
		{[]string{"exec", "--timeout", "-5s", "--", "true"}, "ptyhub exec: --timeout must be positive", "timeout_ms"},
		{[]string{"wait", "--timeout", "-1s", r.SessionID}, "ptyhub wait: --timeout must be 0 or more", "timeout_ms"},
		{[]string{"read", r.SessionID, "--tail", "-2"}, "ptyhub read: --tail must be positive", "tail_lines"},
		{[]string{"read", r.SessionID, "--from", "100", "--to", "10"}, "ptyhub read: --from 100 is after --to 10", "to 8"},
	} {
		_, errs, code := h.run(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Contains(errs, c.flag) {
			t.Errorf("ptyhub %q: status %d, stderr %q; want status 2 and %q, without %q", c.args, code, errs, c.want, c.flag)
		}
	}

	got := runSteps(t, h, []string{"mcp"}, []map[string]any{
		tool("s", "exec_command", map[string]any{"cmd": "printf 'seven!\\n'"}),
		tool("re", "exec_command", map[string]any{"cmd": "true", "wait_for": "("}),
		tool("dir", "exec_command", map[string]any{"cmd": "true", "workdir": "no such dir"}),
		tool("timeout", "exec_command", map[string]any{"cmd": "true", "timeout_ms": -5}),
		tool("tail", "read_output", map[string]any{"session_id": "$s", "tail_lines": -2}),
		tool("range", "read_output", map[string]any{"session_id": "$s", "from": 100, "to": 10}),
	})
	for step, want := range map[string]string{
		"re":      "wait_for is not a valid regular expression",
		"dir":     `workdir "no such dir"`,
		"timeout": "timeout_ms must be positive",
		"tail":    "tail_lines must be positive",
		"range":   "from 100 is after to 10",
	} {
		if s := got[step]; !s.IsError || !strings.Contains(s.Text, want) || strings.Contains(s.Text, "--") {
			t.Errorf("%s: %+v; want a tool error saying %q", step, s, want)
		}
	}
}

// TestLogsByName: `ptyhub logs NAME` works wherever `ptyhub read NAME` does: of two
// sessions of that name it prints the newest, and after kill-server it finds the
// newest transcript of that name on disk.
func TestLogsByName(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	h.ok("exec", "--name", "nm", "--", "echo", "first-run")
	h.ok("exec", "--name", "nm", "--", "echo", "second-run")
	for _, when := range []string{"in the server", "after kill-server"} {
		for _, cmd := range []string{"read", "logs"} {
			out := h.ok(cmd, "nm")
			if !strings.Contains(out, "second-run") || strings.Contains(out, "first-run") {
				t.Errorf("%s: ptyhub %s nm printed %q; want the newest session's output", when, cmd, out)
			}
		}
		if when == "in the server" {
			h.ok("kill-server")
		}
	}
}

// TestHostMeansHost: with --host or $PTYHUB_HOST, status shows that host's server, and
// kill-server refuses (it can only signal a server of this machine) instead of stopping
// the local one; without a server, status says so in a sentence.
func TestHostMeansHost(t *testing.T) {
	t.Parallel()
	s := rmStartSSHD(t)
	h := s.hub(t)
	if _, errs, code := h.run("status"); code != 1 || !strings.Contains(errs, "no ptyhub server is running on "+h.socket) {
		t.Errorf("status without a server: status %d, stderr %q", code, errs)
	}
	h.ok("ls") // starts the local server
	local := h.serverPID()
	h.ok("--host", s.url, "ls") // starts the host's server
	remote := s.remote.serverPID()
	if local == 0 || remote == 0 || local == remote {
		t.Fatalf("servers: local %d, host %d", local, remote)
	}
	for _, args := range [][]string{{"--host", s.url, "status"}, {"status", "--host", s.url}} {
		if out := h.ok(args...); !strings.Contains(out, "server     pid "+strconv.Itoa(remote)+",") {
			t.Errorf("ptyhub %q shows another server than the host's (pid %d):\n%s", args, remote, out)
		}
	}
	if out := h.inDir(h.dir, "PTYHUB_HOST="+s.url).ok("status"); !strings.Contains(out, "server     pid "+strconv.Itoa(remote)+",") {
		t.Errorf("PTYHUB_HOST=%s ptyhub status shows another server than the host's (pid %d):\n%s", s.url, remote, out)
	}
	for _, c := range []struct {
		hub  *svHub
		args []string
	}{
		{h.inDir(h.dir, "PTYHUB_HOST="+s.url), []string{"kill-server"}},
		{h, []string{"--host", s.url, "kill-server"}},
		{h, []string{"kill-server", "--host", s.url}},
	} {
		_, errs, code := c.hub.run(c.args...)
		if code != 2 || !strings.Contains(errs, s.url) || !strings.Contains(errs, "on that host") {
			t.Errorf("ptyhub %q: status %d, stderr %q; want a refusal naming the host", c.args, code, errs)
		}
		if h.serverPID() != local || s.remote.serverPID() != remote {
			t.Fatalf("ptyhub %q stopped a server (local %d → %d, host %d → %d)", c.args, local, h.serverPID(), remote, s.remote.serverPID())
		}
	}
}

// TestRmExitedSaysAlreadyEnded: rm of sessions that ended long ago does not say they
// ended now, and `ls --help` explains why ids jump between processes.
func TestRmExitedSaysAlreadyEnded(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	h.ok("exec", "--", "true")
	out := h.ok("rm", "--exited")
	if !strings.Contains(out, "had already ended: exit code 0") {
		t.Errorf("rm --exited printed %q", out)
	}
	if out := h.ok("ls", "--help"); !strings.Contains(out, "blocks of 64") {
		t.Errorf("ls --help does not explain the ids:\n%s", out)
	}
}

// TestHostSessionsAsResources: a session on a host (a real sshd) is read as a resource
// by its HOST:ID, as the tools name it: its text and its screen.
func TestHostSessionsAsResources(t *testing.T) {
	t.Parallel()
	s := rmStartSSHD(t)
	h := s.hub(t)
	got := runSteps(t, h, []string{"mcp"}, []map[string]any{
		tool("remote", "exec_command", map[string]any{"host": s.url, "cmd": "echo remote-$((40+2)); exec sleep 600", "wait_for": "remote-42", "yield_time_ms": 60000}),
		{"step": "text", "read": "ptyhub://session/$remote"},
		{"step": "screen", "read": "ptyhub://session/$remote/screen"},
		tool("kill", "kill_session", map[string]any{"session_id": "$remote"}),
	})
	id := got["remote"].field("session_id")
	if !strings.HasPrefix(id, s.url+":") {
		t.Fatalf("the remote session's id is %q", id)
	}
	for _, step := range []string{"text", "screen"} {
		if r := string(got[step].Result); !strings.Contains(r, "remote-42") {
			t.Errorf("resources/read of %s (%s): %s", id, step, r)
		}
	}
	if got["kill"].IsError {
		t.Errorf("kill_session %s: %+v", id, got["kill"])
	}
}
