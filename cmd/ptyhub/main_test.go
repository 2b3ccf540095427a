package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/session"
)

// bin is the ptyhub binary built once for the tests; they run it as a user would.
var bin string

func TestMain(m *testing.M) {
	if os.Getenv(keyboardChildEnv) == "1" {
		os.Exit(keyboardChild())
	}
	dir, err := os.MkdirTemp("", "ptyhub-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "ptyhub")
	build := testtool.GoBuild(bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building ptyhub:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// Every ptyhub the tests start talks to a private server, never the user's.
	sock := filepath.Join(dir, "run", "server.sock")
	os.Setenv("PTYHUB_SOCKET", sock)
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	code := m.Run()
	stopServer(sock)
	os.RemoveAll(dir)
	os.Exit(code)
}

// stopServer ends the test server (its pid is in the lock file) and waits for it.
func stopServer(sock string) {
	b, _ := os.ReadFile(sock + ".lock")
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	for i := 0; i < 1000 && syscall.Kill(pid, 0) == nil && !proctest.Exited(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

type runResult struct {
	stdout, stderr string
	code           int
}

// ptyhub runs the binary with args and no stdin, and returns what it printed.
func ptyhub(t *testing.T, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
	default:
		t.Fatalf("ptyhub %q: %v", args, err)
	}
	return runResult{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args       []string
		code       int
		stdout     string // substring of stdout ("" = must be empty)
		stderr     string // substring of stderr ("" = must be empty)
		oneLineErr bool
	}{
		{args: nil, code: 2, stderr: "Commands:"},
		{args: []string{"help"}, code: 0, stdout: "Commands:"},
		{args: []string{"--help"}, code: 0, stdout: "Commands:"},
		{args: []string{"-h"}, code: 0, stdout: "Commands:"},
		{args: []string{"help", "exec"}, code: 0, stdout: "Exit status:"},
		{args: []string{"help", "nope"}, code: 2, stderr: `unknown command "nope"`, oneLineErr: true},
		{args: []string{"version"}, code: 0, stdout: "ptyhub "},
		{args: []string{"--version"}, code: 0, stdout: "ptyhub "},
		{args: []string{"version", "--help"}, code: 0, stdout: "Usage: ptyhub version"},
		{args: []string{"version", "x"}, code: 2, stderr: "takes no arguments", oneLineErr: true},
		{args: []string{"nope"}, code: 2, stderr: `unknown command "nope"`, oneLineErr: true},
		{args: []string{"--nope"}, code: 2, stderr: `unknown flag "--nope"`, oneLineErr: true},
		{args: []string{"attach"}, code: 2, stderr: "give one session ID", oneLineErr: true},
		{args: []string{"attach", "999999"}, code: 1, stderr: "standard input is not a terminal", oneLineErr: true},
		{args: []string{"write", "999999", "x"}, code: 1, stderr: "no such session", oneLineErr: true},
		{args: []string{"write", "999999", "y"}, code: 1, stderr: "'ptyhub ls' lists the sessions", oneLineErr: true},
		{args: []string{"kill", "--help"}, code: 0, stdout: "ptyhub kill ID"},
		{args: []string{"ls", "x"}, code: 2, stderr: "takes no arguments", oneLineErr: true},
		{args: []string{"serve", "--help"}, code: 0, stdout: "ptyhub serve"},
		{args: []string{"exec", "--help"}, code: 0, stdout: "ptyhub exec [flags] -c 'SHELL COMMAND LINE'"},
		{args: []string{"exec", "-h"}, code: 0, stdout: "--wait-for regexp"},
		{args: []string{"exec", "--bogus"}, code: 2, stderr: "flag provided but not defined: -bogus", oneLineErr: true},
		{args: []string{"exec", "--yield", "soon", "--", "true"}, code: 2, stderr: `invalid value "soon" for flag -yield`, oneLineErr: true},
		{args: []string{"exec"}, code: 2, stderr: "no command", oneLineErr: true},
		{args: []string{"exec", "-c", "true", "--", "true"}, code: 2, stderr: "not both", oneLineErr: true},
		{args: []string{"exec", "-c", ""}, code: 2, stderr: "-c needs a shell command line", oneLineErr: true},
		{args: []string{"exec", "--env", "NOEQUALS", "--", "true"}, code: 2, stderr: "want K=V", oneLineErr: true},
		{args: []string{"exec", "--", "make test | tail"}, code: 2, stderr: `use: ptyhub exec -c 'make test | tail'`, oneLineErr: true},
		{args: []string{"mcp", "--help"}, code: 0, stdout: "claude mcp add ptyhub -- ptyhub mcp"},
		{args: []string{"mcp", "extra"}, code: 2, stderr: `unexpected argument "extra"`, oneLineErr: true},
		{args: []string{"mcp", "--bogus"}, code: 2, stderr: "flag provided but not defined", oneLineErr: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := ptyhub(t, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit status %d, want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			check := func(name, got, want string) {
				if want == "" && got != "" {
					t.Errorf("%s = %q, want it empty", name, got)
				}
				if !strings.Contains(got, want) {
					t.Errorf("%s = %q, want it to contain %q", name, got, want)
				}
			}
			check("stdout", r.stdout, tt.stdout)
			check("stderr", r.stderr, tt.stderr)
			if tt.oneLineErr && strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", r.stderr)
			}
		})
	}
}

func TestExec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings
		stderr string   // substring; "" = empty
	}{
		{"echo", []string{"exec", "--", "echo", "hello"}, 0,
			[]string{"Process exited with code 0\n", "Output:\nhello\n"}, ""},
		{"no --", []string{"exec", "echo", "a  b"}, 0, []string{"Output:\na  b\n"}, ""},
		{"shell line", []string{"exec", "-c", "echo $((6*7)) | tr 4 X"}, 0, []string{"X2\n"}, ""},
		{"exit code", []string{"exec", "-c", "exit 3"}, 3, []string{"Process exited with code 3"}, ""},
		{"signal", []string{"exec", "-c", "kill -TERM $$"}, 143, []string{"Process killed by signal SIGTERM"}, ""},
		{"not found", []string{"exec", "--", "/nonexistent/program"}, 127, []string{"Process exited with code 127"}, ""},
		{"timeout", []string{"exec", "--timeout", "300ms", "--", "sleep", "30"}, 124, []string{"timed out"}, ""},
		{"cwd", []string{"exec", "--cwd", "/", "--", "pwd"}, 0, []string{"Output:\n/\n"}, ""},
		{"env", []string{"exec", "--env", "GREETING=hi there", "-c", `echo "$GREETING"`}, 0, []string{"hi there\n"}, ""},
		{"no tty", []string{"exec", "--no-tty", "-c", "test -t 1 && echo tty || echo pipe"}, 0, []string{"pipe\n"}, ""},
		{"tty", []string{"exec", "-c", "test -t 1 && echo tty || echo pipe"}, 0, []string{"tty\n"}, ""},
		{"size", []string{"exec", "--rows", "33", "--cols", "99", "--", "stty", "size"}, 0, []string{"33 99\n"}, ""},
		{"stdin", []string{"exec", "--stdin", "abc\n", "--close-stdin", "--", "cat"}, 0, []string{"abc\n"}, ""},
		{"missing cwd", []string{"exec", "--cwd", "/nonexistent/dir", "--", "true"}, 2, nil, "/nonexistent/dir"},
		{"bad regexp", []string{"exec", "--wait-for", "(", "--", "true"}, 2, nil, "ptyhub exec: "},
		{"deadline", []string{"exec", "--yield", "1s", "-c", "echo started; sleep 30"}, 124,
			[]string{"Process running with session ID", "started"}, "still running after --yield 1s: 'ptyhub attach"},
		{"wait-for", []string{"exec", "--wait-for", "READY", "-c", "echo READY; sleep 30"}, 0,
			[]string{"READY"}, "matched --wait-for"},
		{"embedded deadline", []string{"exec", "--embedded", "--yield", "10s", "-c", "echo started; sleep 600"}, 124,
			[]string{"Process running with session ID", "started"}, "still running after --yield 10s; killed it (--embedded)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := ptyhub(t, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout %q lacks %q", r.stdout, w)
				}
			}
			if tt.stderr == "" && r.stderr != "" || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr %q, want %q", r.stderr, tt.stderr)
			}
			if tt.code == 2 && strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("error is not one line: %q", r.stderr)
			}
		})
	}
}

// --json prints exactly the Result object.
func TestExecJSON(t *testing.T) {
	t.Parallel()
	r := ptyhub(t, "exec", "--json", "--", "echo", "hi")
	if r.code != 0 {
		t.Fatalf("exit status %d: %s", r.code, r.stderr)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("want one line of JSON, got %q", r.stdout)
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	var res session.Result
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not a Result: %v\n%s", err, r.stdout)
	}
	if res.State != session.StateExited || res.ExitCode == nil || *res.ExitCode != 0 || res.Output != "hi\n" ||
		res.ReturnedBecause != session.BecauseExit || res.SessionID == "" {
		t.Errorf("result %+v", res)
	}
}

// A signal to ptyhub exec kills the session's processes, says so, and exits 128+N.
func TestExecInterrupted(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			marker := newMarker(t)
			cmd := exec.Command(bin, "exec", "--yield", "1m", "--env", "PTYHUB_TEST_MARKER="+marker,
				"-c", "trap '' HUP TERM; echo started; sleep 1000")
			out := &testtool.Buffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitMarked(t, marker, true)
			cmd.Process.Signal(sig)
			err := waitTimeout(cmd, 15*time.Second)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
				t.Errorf("exit: %v, want status %d\n%s", err, 128+int(sig), out)
			}
			// It says what became of the session.
			if want := "interrupted by " + unix.SignalName(sig) + "; killed session "; !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
			waitMarked(t, marker, false)
		})
	}
}

// However `ptyhub mcp` is told to stop — stdin closed, SIGTERM,
// SIGINT, a broken stdout — it ends every session's whole process tree, also jobs that
// ignore SIGHUP and SIGTERM.
func TestMCPLifecycle(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"stdin-eof", "SIGTERM", "SIGINT", "SIGHUP", "stdout-closed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			marker := newMarker(t)
			cmd := exec.Command(bin, "mcp")
			stdin, _ := cmd.StdinPipe()
			stdoutR, _ := cmd.StdoutPipe()
			stderr := &testtool.Buffer{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			out := bufio.NewReader(stdoutR)
			rpc := func(line string) map[string]any {
				t.Helper()
				if _, err := io.WriteString(stdin, line+"\n"); err != nil {
					t.Fatalf("write: %v", err)
				}
				if !strings.Contains(line, `"id"`) {
					return nil
				}
				for {
					l, err := out.ReadString('\n')
					if err != nil {
						t.Fatalf("read: %v (stderr %s)", err, stderr)
					}
					var m map[string]any
					if err := json.Unmarshal([]byte(l), &m); err != nil {
						t.Fatalf("stdout line %q is not JSON: %v", l, err)
					}
					if _, ok := m["id"]; ok { // not a notification (resources/list_changed)
						return m
					}
				}
			}
			rpc(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
			rpc(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			for i := range 3 {
				args, _ := json.Marshal(map[string]any{
					"cmd":           "trap '' HUP TERM; (trap '' HUP TERM; sleep 1000) & setsid sleep 1000 & sleep 1000",
					"env":           map[string]string{"PTYHUB_TEST_MARKER": marker},
					"yield_time_ms": 100,
				})
				resp := rpc(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"exec_command","arguments":%s}}`, 10+i, args))
				if res, _ := resp["result"].(map[string]any); res == nil || res["isError"] == true {
					t.Fatalf("exec_command: %v", resp)
				}
			}
			waitMarked(t, marker, true)
			// A call still waiting (10 minutes) must not hold up the shutdown.
			io.WriteString(stdin, `{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"write_stdin","arguments":{"session_id":"1","yield_time_ms":600000}}}`+"\n")
			switch how {
			case "stdin-eof":
				stdin.Close()
			case "SIGTERM":
				cmd.Process.Signal(syscall.SIGTERM)
			case "SIGINT":
				cmd.Process.Signal(syscall.SIGINT)
			case "SIGHUP":
				cmd.Process.Signal(syscall.SIGHUP)
			case "stdout-closed":
				stdoutR.Close()
				// The next response meets a broken pipe.
				io.WriteString(stdin, `{"jsonrpc":"2.0","id":99,"method":"ping"}`+"\n")
			}
			start := time.Now()
			// The sessions ignore SIGTERM, so the shutdown takes the kill's grace
			// (2 s) and more under load; what matters is that it does not wait for
			// the call of 10 minutes.
			err := waitTimeout(cmd, 2*time.Minute)
			code := -1
			var ee *exec.ExitError
			if err == nil {
				code = 0
			} else if errors.As(err, &ee) {
				if ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
					t.Errorf("killed by a signal, without cleanup: %v", err)
				}
				code = ee.ExitCode()
			} else {
				t.Errorf("wait: %v", err)
			}
			want := map[string][]int{"stdin-eof": {0}, "SIGTERM": {143}, "SIGINT": {130}, "SIGHUP": {129}, "stdout-closed": {0, 1}}[how]
			if !slices.Contains(want, code) {
				t.Errorf("exit status %d, want one of %v (stderr %s)", code, want, stderr)
			}
			waitMarked(t, marker, false)
			if d := time.Since(start); d > time.Minute {
				t.Errorf("shutdown took %v, as if waiting for the 10-minute call", d)
			}
			if strings.Contains(stderr.String(), "panic") {
				t.Errorf("stderr: %s", stderr)
			}
		})
	}
}

// The binary as an MCP server for the Go SDK's client: the tools end to end.
func TestMCPTools(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "mcp")
	cmd.Stderr = &testtool.Buffer{}
	client := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (string, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError {
			return "ERROR: " + text, nil
		}
		sc, _ := res.StructuredContent.(map[string]any)
		return text, sc
	}
	text, _ := call("exec_command", map[string]any{"cmd": "echo hi"})
	if !strings.Contains(text, "Process exited with code 0") || !strings.Contains(text, "Output:\nhi") {
		t.Errorf("exec_command echo: %s", text)
	}
	text, sc := call("exec_command", map[string]any{"argv": []string{"bash", "--norc", "--noprofile", "-i"},
		"env": map[string]string{"PS1": "$ "}, "wait_for": `\$ $`, "yield_time_ms": 10000})
	id, _ := sc["session_id"].(string)
	if id == "" || sc["state"] != "running" {
		t.Fatalf("exec_command bash: %s", text)
	}
	text, _ = call("write_stdin", map[string]any{"session_id": id, "chars": "echo $((6*7))\n", "wait_for": "42", "yield_time_ms": 5000})
	if !strings.Contains(text, "42") {
		t.Errorf("write_stdin: %s", text)
	}
	if text, _ = call("read_output", map[string]any{"session_id": id}); !strings.Contains(text, "42") {
		t.Errorf("read_output: %s", text)
	}
	if text, _ = call("list_sessions", nil); !strings.Contains(text, "bash") {
		t.Errorf("list_sessions: %s", text)
	}
	if text, _ = call("resize_session", map[string]any{"session_id": id, "rows": 40, "cols": 100}); strings.HasPrefix(text, "ERROR") {
		t.Errorf("resize_session: %s", text)
	}
	if text, _ = call("write_stdin", map[string]any{"session_id": id, "chars": "stty size\n", "wait_for": "40 100", "yield_time_ms": 5000}); !strings.Contains(text, "40 100") {
		t.Errorf("stty size after resize: %s", text)
	}
	if text, sc = call("kill_session", map[string]any{"session_id": id}); sc["state"] != "exited" {
		t.Errorf("kill_session: %s", text)
	}
	if text, _ = call("exec_command", map[string]any{"cmd": "ls", "yield_ms": 5}); !strings.HasPrefix(text, "ERROR") || !strings.Contains(text, "yield_ms") {
		t.Errorf("unknown argument: %s", text)
	}
	if text, _ = call("write_stdin", map[string]any{"session_id": "99999", "chars": "x"}); !strings.HasPrefix(text, "ERROR") {
		t.Errorf("unknown session: %s", text)
	}
}

// Calls are served concurrently (a long yield blocks nothing), and
// cancelling a call stops its wait but not its session.
func TestMCPConcurrentAndCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(bin, "mcp")
	cmd.Stderr = &testtool.Buffer{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callTool := func(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	}

	// A session waiting 10 minutes for input that never comes...
	res, err := callTool(ctx, "exec_command", map[string]any{"argv": []string{"cat"}, "yield_time_ms": 0})
	if err != nil || res.IsError {
		t.Fatalf("exec cat: %v %v", err, res)
	}
	id := res.StructuredContent.(map[string]any)["session_id"].(string)
	waitCtx, stopWait := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() {
		_, err := callTool(waitCtx, "write_stdin", map[string]any{"session_id": id, "yield_time_ms": 600000, "wait_for": "never"})
		waited <- err
	}()

	// ...while 30 commands run side by side: each marks itself started and waits until
	// all 30 have, so every call can end only if the calls are served at once (served one
	// by one, the first would wait for the others until its yield ran out).
	const n = 30
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := fmt.Sprintf(`touch %s/%d; while [ "$(ls %s | wc -l)" -lt %d ]; do sleep 0.05; done; echo out-%d`, dir, i, dir, n, i)
			res, err := callTool(ctx, "exec_command", map[string]any{"cmd": script, "yield_time_ms": 300000})
			if err != nil || res.IsError {
				t.Errorf("call %d: %v %v", i, err, res)
				return
			}
			sc := res.StructuredContent.(map[string]any)
			if out, _ := sc["output"].(string); out != fmt.Sprintf("out-%d\n", i) || sc["exit_code"] != 0.0 {
				t.Errorf("call %d did not end with the others (calls served one at a time?): %v", i, sc)
			}
		}()
	}
	wg.Wait()

	stopWait()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the call did not end it")
	}
	res, err = callTool(ctx, "write_stdin", map[string]any{"session_id": id, "chars": "still here\n", "wait_for": "still here"})
	if err != nil || res.IsError || res.StructuredContent.(map[string]any)["state"] != "running" {
		t.Errorf("session after the cancelled call: %v %v", err, res)
	}
}

// --- helpers ---

func newMarker(t *testing.T) string {
	return fmt.Sprintf("m%d-%d-%s", os.Getpid(), time.Now().UnixNano(), strings.NewReplacer("/", "-").Replace(t.Name()))
}

// marked lists the processes whose environment holds PTYHUB_TEST_MARKER=marker.
func marked(marker string) []int { return proctest.WithEnv("PTYHUB_TEST_MARKER=" + marker) }

// waitMarked waits up to 10 s until marked processes exist (want) or are all gone.
func waitMarked(t *testing.T, marker string, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := marked(marker)
		if (len(pids) > 0) == want {
			return
		}
		if time.Now().After(deadline) {
			if want {
				t.Fatalf("no process with marker %s appeared", marker)
			}
			t.Fatalf("processes survived: %v", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitTimeout(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("did not exit within %v", d)
	}
}

// ptyhub attach with a pipe for stdin (open, never ending, not a terminal) fails at once
// with a clear error instead of hanging.
func TestAttachWithoutTerminal(t *testing.T) {
	t.Parallel()
	r := ptyhub(t, "exec", "--json", "--yield", "0", "--", "cat")
	var res session.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.State != session.StateRunning {
		t.Fatalf("exec cat: %v %+v", err, r)
	}
	defer ptyhub(t, "rm", res.SessionID)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd := exec.Command(bin, "attach", res.SessionID)
	cmd.Stdin = pr
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run() // before: attached and waited on the pipe for ever
	pr.Close()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "not a terminal") ||
		!strings.Contains(stderr.String(), "ptyhub read -f "+res.SessionID) {
		t.Errorf("attach from a pipe: %v, status %d, stderr %q", err, code, stderr.String())
	}
}
