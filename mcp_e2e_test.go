package ptyhub_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
)

// TestMCPTypeScriptClient runs `ptyhub mcp` under the official TypeScript MCP client
// (testdata/mcpclient/client.mjs, @modelcontextprotocol/sdk pinned in its package.json),
// as Claude Code and other Node-based agents do: all the tools, a bad argument, and the
// end of the connection ending every session.
//
// It needs node and npm. The npm packages are taken from testdata/mcpclient/node_modules
// when present (.ci/run installs them there), else installed once into the user cache
// dir. Without node the test is skipped, except under CI=true, where it fails.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := testtool.Path(t, "node") // Node.js 18 or later runs the TypeScript MCP client
	dir := e2eClientDir(t)
	bin := e2eBuildPtyhub(t)

	marker := fmt.Sprintf("e2e-ts-%d-%d", os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"), bin)
	// A private ptyhub server for this test (stopped at cleanup), never the user's; the
	// agent (and so ptyhub mcp) runs in a project directory, not in the repository.
	sv := svNew(t)
	cmd.Dir = sv.dir
	cmd.Env = append(sv.env, "PTYHUB_E2E_MARKER="+marker, "PWD="+sv.dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	cs := parseClientSteps(t, &stdout)
	if runErr != nil || t.Failed() {
		t.Fatalf("client: %v\nsteps: %v\nstderr:\n%s", runErr, cs.order, stderr.String())
	}
	checkClientToolSteps(t, cs)
	if _, ok := cs.steps["closed"]; !ok {
		t.Errorf("the client did not close cleanly; steps %v", cs.order)
	}

	// Closing the client closed ptyhub's stdin: ptyhub exits and ends its sessions.
	if pid, _ := cs.steps["connect"]["pid"].(float64); pid > 0 {
		e2eWaitGone(t, "ptyhub mcp", func() []int {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", int(pid))); err == nil && !proctest.Exited(int(pid)) {
				return []int{int(pid)}
			}
			return nil
		})
	}
	e2eWaitGone(t, "session processes", func() []int { return proctest.WithEnv("PTYHUB_TEST_MARKER=" + marker) })
	if t.Failed() {
		t.Logf("client stderr:\n%s", stderr.String())
	}
}

// clientSteps are the lines client.mjs printed, one JSON object per step, by step
// name, and the names in the order printed.
type clientSteps struct {
	steps map[string]map[string]any
	order []string
}

// parseClientSteps reads the client's stdout; a line that is not JSON fails t
// (without stopping it).
func parseClientSteps(t *testing.T, stdout *bytes.Buffer) *clientSteps {
	t.Helper()
	cs := &clientSteps{steps: map[string]map[string]any{}}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("client printed a line that is not JSON: %q", sc.Text())
			continue
		}
		name, _ := m["step"].(string)
		cs.steps[name] = m
		cs.order = append(cs.order, name)
	}
	return cs
}

// get returns a tool step's text and structured content, failing t on a missing
// step, a client error or an isError other than wantError.
func (cs *clientSteps) get(t *testing.T, name string, wantError bool) (string, map[string]any) {
	t.Helper()
	m, ok := cs.steps[name]
	if !ok {
		t.Errorf("step %s missing (steps: %v)", name, cs.order)
		return "", nil
	}
	if e, ok := m["error"]; ok {
		t.Errorf("step %s: client error: %v", name, e)
		return "", nil
	}
	text, _ := m["text"].(string)
	if isErr, _ := m["isError"].(bool); isErr != wantError {
		t.Errorf("step %s: isError = %v, want %v: %s", name, isErr, wantError, text)
	}
	st, _ := m["structured"].(map[string]any)
	return text, st
}

// checkClientToolSteps checks the result of each tool call client.mjs made.
func checkClientToolSteps(t *testing.T, cs *clientSteps) {
	t.Helper()
	contains := func(name, text, want string) {
		t.Helper()
		if !strings.Contains(text, want) {
			t.Errorf("step %s: text %q lacks %q", name, text, want)
		}
	}
	if tools, _ := cs.steps["list_tools"]["tools"].([]any); len(tools) != 8 {
		t.Errorf("list_tools: %v, want the eight tools", cs.steps["list_tools"]["tools"])
	}
	text, st := cs.get(t, "exec_echo", false)
	contains("exec_echo", text, "Process exited with code 0")
	contains("exec_echo", text, "Output:\nhi")
	if st["exit_code"] != 0.0 || st["state"] != "exited" {
		t.Errorf("exec_echo structuredContent: %v", st)
	}
	text, st = cs.get(t, "exec_bash", false)
	contains("exec_bash", text, "Process running with session ID")
	if st["state"] != "running" {
		t.Errorf("exec_bash structuredContent: %v", st)
	}
	text, st = cs.get(t, "write_42", false)
	contains("write_42", text, "42")
	if st["returned_because"] != "pattern" {
		t.Errorf("write_42: returned_because %v", st["returned_because"])
	}
	text, _ = cs.get(t, "read_output", false)
	contains("read_output", text, "42")
	text, st = cs.get(t, "list_sessions", false)
	contains("list_sessions", text, "bash")
	if ss, _ := st["sessions"].([]any); len(ss) < 2 {
		t.Errorf("list_sessions structuredContent: %v", st)
	}
	text, st = cs.get(t, "resize", false)
	if st["rows"] != 40.0 || st["cols"] != 100.0 {
		t.Errorf("resize: %s %v", text, st)
	}
	text, _ = cs.get(t, "stty_size", false)
	contains("stty_size", text, "40 100")
	text, st = cs.get(t, "kill", false)
	if st["state"] != "exited" {
		t.Errorf("kill: %s %v", text, st)
	}
	text, _ = cs.get(t, "bad_argument", true)
	contains("bad_argument", text, "yield_ms")
	text, _ = cs.get(t, "unknown_session", true)
	contains("unknown_session", text, "987654")
	if _, st = cs.get(t, "exec_marked", false); st["state"] != "running" {
		t.Errorf("exec_marked: %v", st)
	}
}

// e2eClientDir returns a directory holding client.mjs and node_modules of the pinned SDK.
func e2eClientDir(t *testing.T) string {
	t.Helper()
	return e2eNodeDir(t, "mcpclient", "@modelcontextprotocol/sdk", "client.mjs", "callers.mjs", "notify.mjs", "steps.mjs", "waiting.mjs", "e2e.mjs")
}

// e2eRunClient runs cmd, a client script under Node.js named name, and returns the lines
// it printed (one JSON object each) with its whole stdout and stderr; it fails t when
// the client fails.
func e2eRunClient(t *testing.T, cmd *osexec.Cmd, name string) (lines []string, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, out.String(), errb.String())
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n"), out.String(), errb.String()
}

// e2eNodeDir returns a directory holding the scripts of testdata/NAME and the
// node_modules of its package-lock.json (where package pkg is installed): those in
// testdata/NAME when present (.ci/run installs them there), else installed once into the
// user cache dir.
func e2eNodeDir(t *testing.T, name, pkg string, scripts ...string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join("node_modules", filepath.FromSlash(pkg), "package.json")
	if _, err := os.Stat(filepath.Join(src, marker)); err == nil {
		return src
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "ptyhub-test", name+"-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
		// Install into a fresh directory, then move it into place, so concurrent runs and
		// interrupted installs never leave a half-filled cache.
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		for _, f := range []string{"package.json", "package-lock.json"} {
			e2eCopy(t, filepath.Join(src, f), filepath.Join(tmp, f))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		npm := osexec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		npm.Dir = tmp
		if out, err := npm.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in testdata/%s: %v\n%s", name, err, out)
		}
		if err := os.Rename(tmp, dir); err != nil {
			if _, serr := os.Stat(filepath.Join(dir, "node_modules")); serr != nil {
				t.Fatalf("installing testdata/%s: %v", name, err)
			} // else another run installed it first
		}
	}
	// The installed packages are shared by every checkout of this user; the scripts are
	// this checkout's, in a directory of this test's own, so a concurrent run of another
	// version cannot swap them.
	own := t.TempDir()
	for _, f := range scripts {
		e2eCopy(t, filepath.Join(src, f), filepath.Join(own, f))
	}
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(own, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return own
}

func e2eCopy(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// e2eBuildPtyhub returns the ptyhub binary built once for the test binary (svBinary):
// a go build per test relinks the whole program each time (seconds of CPU), and no test
// writes to it or to its directory.
func e2eBuildPtyhub(t *testing.T) string {
	t.Helper()
	bin, err := svBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// e2eWaitGone waits up to 10 s for list to return nothing.
func e2eWaitGone(t *testing.T, what string, list func() []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := list()
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s still alive after the client closed: pids %v", what, pids)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMCPCallers runs several agents at once with the TypeScript MCP client, each with its
// own `ptyhub mcp` sharing one server, as Claude Code starts them: in the project's
// directory (through a symbolic link, with a space in its name) and with the environment
// of its MCP configuration. Commands run there and see that environment, except
// credential-like variables unless --pass-env allows them; --workdir and relative
// workdirs resolve against that directory; --embedded follows the same rules.
func TestMCPCallers(t *testing.T) {
	t.Parallel()
	node := testtool.Path(t, "node") // Node.js 18 or later runs the TypeScript MCP client
	dir := e2eClientDir(t)
	bin := e2eBuildPtyhub(t)
	sv := svNew(t)
	proj := sv.dir
	if err := os.Mkdir(filepath.Join(proj, "sub dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(filepath.Dir(proj), "link to proj")
	other := filepath.Join(filepath.Dir(proj), "other proj")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	venvBin := filepath.Join(proj, "venv bin")
	if err := os.Mkdir(venvBin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(venvBin, "hello-agent"), []byte("#!/bin/sh\necho hello from the agent PATH\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"PTYHUB_SOCKET": sv.socket, "XDG_STATE_HOME": filepath.Join(filepath.Dir(proj), "state")}
	env := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	type call struct {
		Step string         `json:"step"`
		Tool string         `json:"tool"`
		Args map[string]any `json:"args"`
	}
	type agent struct {
		Name  string            `json:"name"`
		Args  []string          `json:"args"`
		Cwd   string            `json:"cwd"`
		Env   map[string]string `json:"env"`
		Calls []call            `json:"calls"`
	}
	exec := func(step, cmd string, extra ...any) call {
		args := map[string]any{"cmd": cmd, "yield_time_ms": 20000}
		for i := 0; i < len(extra); i += 2 {
			args[extra[i].(string)] = extra[i+1]
		}
		return call{step, "exec_command", args}
	}
	const probe = `echo "[$PWD][${FROM_MCP_CONFIG-unset}][${MY_API_TOKEN-unset}][${GH_TOKEN-unset}][${VIRTUAL_ENV-unset}]"`
	spec := []agent{
		{"a", []string{"mcp"}, link,
			env("PWD", link, "FROM_MCP_CONFIG", "agent-a", "MY_API_TOKEN", "s3cret", "VIRTUAL_ENV", "/venv-a",
				"PATH", venvBin+":"+os.Getenv("PATH")),
			[]call{exec("env", probe), exec("relative", "pwd", "workdir", "sub dir"),
				{"path", "exec_command", map[string]any{"argv": []string{"hello-agent"}, "yield_time_ms": 20000}},
				exec("explicit", `echo "[$MY_API_TOKEN]"`, "env", map[string]string{"MY_API_TOKEN": "given"})}},
		{"b", []string{"mcp", "--pass-env", "MY_API_TOKEN"}, other,
			env("PWD", other, "MY_API_TOKEN", "s3cret", "GH_TOKEN", "x"),
			[]call{exec("env", probe), {"list", "list_sessions", map[string]any{}}}},
		{"c", []string{"mcp", "--workdir", "sub dir"}, proj, env("PWD", proj),
			[]call{exec("workdir", "pwd")}},
		{"d", []string{"mcp", "--embedded"}, link, env("PWD", link, "FROM_MCP_CONFIG", "agent-d", "GH_TOKEN", "x"),
			[]call{exec("env", probe)}},
	}
	js, _ := json.Marshal(spec)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, filepath.Join(dir, "callers.mjs"), bin, string(js))
	cmd.Dir = dir
	cmd.Env = sv.env
	lines, _, stderr := e2eRunClient(t, cmd, "callers.mjs")
	got := map[string]string{}
	for _, line := range lines {
		var m struct {
			Agent, Step, Text, Error string
			IsError                  bool
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("client printed %q: %v", line, err)
		}
		if m.Error != "" || m.IsError {
			t.Errorf("%s/%s failed: %s%s", m.Agent, m.Step, m.Error, m.Text)
		}
		out := m.Text
		if _, o, ok := strings.Cut(m.Text, "Output:\n"); ok {
			out = o
		}
		got[m.Agent+"/"+m.Step] = out
	}
	want := map[string]string{
		"a/env":      fmt.Sprintf("[%s][agent-a][unset][unset][/venv-a]\n", link),
		"a/relative": filepath.Join(link, "sub dir") + "\n",
		"a/explicit": "[given]\n",
		"a/path":     "hello from the agent PATH\n",
		"b/env":      fmt.Sprintf("[%s][unset][s3cret][unset][unset]\n", other),
		"c/workdir":  filepath.Join(proj, "sub dir") + "\n",
		"d/env":      fmt.Sprintf("[%s][agent-d][unset][unset][unset]\n", link),
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
	// b listed a's sessions: one server for both.
	if !strings.Contains(got["b/list"], "MY_API_TOKEN") {
		t.Errorf("b/list does not show agent a's sessions (not one shared server?):\n%s", got["b/list"])
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr)
	}
}
