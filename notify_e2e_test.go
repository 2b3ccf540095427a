package ptyhub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// Tests of what an agent learns without polling — wait_sessions, named sessions, the
// list's facts, sessions as resources — through the official TypeScript MCP client
// (testdata/mcpclient/notify.mjs), against a private server and embedded.

// notifyStep is one line notify.mjs printed.
type notifyStep struct {
	Step         string          `json:"step"`
	IsError      bool            `json:"isError"`
	Text         string          `json:"text"`
	Structured   map[string]any  `json:"structured"`
	Result       json.RawMessage `json:"result"`
	Error        string          `json:"error"`
	Notification string          `json:"notification"`
	Params       map[string]any  `json:"params"`
}

// runNotify runs steps with notify.mjs against `ptyhub ARGS…` and returns the steps by
// name and the notifications in the order they came.
func runNotify(t *testing.T, mcpArgs []string, steps []map[string]any) (map[string]notifyStep, []notifyStep) {
	t.Helper()
	var notes []notifyStep
	got := stepsOf(t, svNew(t), "notify.mjs", mcpArgs, steps, &notes)
	return got, notes
}

// stepsOf runs steps with script, a steps client in testdata/mcpclient (steps.mjs,
// notify.mjs), against `ptyhub mcpArgs…` started in sv's project directory with sv's
// environment, and returns the steps it printed by name, failing t on a step's error and
// when the client did not reach its "closed" step. With notes, the notifications it
// printed go there in the order they came; without, a notification is a step like any
// other.
func stepsOf(t *testing.T, sv *svHub, script string, mcpArgs []string, steps []map[string]any, notes *[]notifyStep) map[string]notifyStep {
	t.Helper()
	node := testtool.Path(t, "node") // Node.js 18 or later runs the TypeScript MCP client
	dir := e2eClientDir(t)
	js, _ := json.Marshal(steps)
	args, _ := json.Marshal(mcpArgs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, filepath.Join(dir, script), sv.bin, string(js))
	cmd.Dir = sv.dir
	cmd.Env = append(sv.env, "PWD="+sv.dir, "PTYHUB_E2E_MCP_ARGS="+string(args))
	lines, stdout, stderr := e2eRunClient(t, cmd, script)
	got := map[string]notifyStep{}
	for _, line := range lines {
		var s notifyStep
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("client printed %q: %v", line, err)
		}
		if notes != nil && s.Notification != "" {
			*notes = append(*notes, s)
			continue
		}
		if s.Error != "" {
			t.Errorf("step %s: %s", s.Step, s.Error)
		}
		got[s.Step] = s
	}
	if _, ok := got["closed"]; !ok {
		t.Errorf("the client did not finish:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	return got
}

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// devServer prints "dev-listening PORT" once it listens on a free port of 127.0.0.1.
const devServer = `python3 -u -c 'import http.server as h; s = h.HTTPServer(("127.0.0.1", 0), h.SimpleHTTPRequestHandler); print("dev-listening", s.server_port); s.serve_forever()'`

func fmtSscan(s string, v *int) error {
	_, err := fmt.Sscan(s, v)
	return err
}

func tool(step, name string, args map[string]any) map[string]any {
	return map[string]any{"step": step, "tool": name, "args": args}
}

// TestMCPWaitSessions: an agent starts a build, a test run and a dev server (by name),
// makes one wait_sessions call that returns when the build finishes, finds the dev server
// again by its name without starting a second one, and addresses it by name.
func TestMCPWaitSessions(t *testing.T) {
	t.Parallel()
	for _, mode := range [][]string{{"mcp"}, {"mcp", "--embedded"}} {
		t.Run(strings.Join(mode, "-"), func(t *testing.T) {
			t.Parallel()
			build, tests := mkfifo(t), mkfifo(t)
			wait := tool("wait", "wait_sessions", map[string]any{"timeout_ms": 60000})
			wait["async"] = true
			steps := []map[string]any{
				tool("build", "exec_command", map[string]any{"cmd": "echo compiling; cat '" + build + "' >/dev/null; echo build-done; exit 2", "yield_time_ms": 0}),
				tool("tests", "exec_command", map[string]any{"cmd": "cat '" + tests + "' >/dev/null; echo PASS", "yield_time_ms": 0}),
				tool("dev", "exec_command", map[string]any{"cmd": devServer, "name": "dev", "wait_for": `^dev-listening \d+`}),
				wait,
				{"step": "release", "release": build},
				{"await": "wait"},
				tool("dev-again", "exec_command", map[string]any{"cmd": devServer, "name": "dev", "yield_time_ms": 0}),
				tool("poll-dev", "write_stdin", map[string]any{"session_id": "dev", "yield_time_ms": 0}),
				tool("list", "list_sessions", map[string]any{}),
				tool("bad-until", "wait_sessions", map[string]any{"until": []string{"pattern"}}),
				{"step": "release2", "release": tests},
				tool("wait2", "wait_sessions", map[string]any{"session_ids": []any{2, "dev"}, "until": []string{"exit"}}),
				tool("kill-dev", "kill_session", map[string]any{"session_id": "dev"}),
			}
			got, _ := runNotify(t, mode, steps)
			w := got["wait"]
			if w.IsError || w.Structured["session_id"] != got["build"].Structured["session_id"] ||
				w.Structured["returned_because"] != "exit" || w.Structured["exit_code"] != float64(2) ||
				!strings.Contains(w.Text, "build-done") {
				t.Errorf("wait_sessions did not return the build's exit:\n%s", w.Text)
			}
			// Completion facts: a log of the whole output an agent can grep.
			if lp, _ := w.Structured["log_path"].(string); lp == "" || w.Structured["output_sha256"] == nil || w.Structured["ended_at"] == nil {
				t.Errorf("wait_sessions result of the ended build lacks its completion facts: %v", w.Structured)
			} else if b, err := os.ReadFile(lp); err != nil || string(b) != "compiling\nbuild-done\n" {
				t.Errorf("log %s: %q %v", lp, b, err)
			}
			if others, _ := w.Structured["others"].([]any); len(others) != 2 {
				t.Errorf("wait_sessions others: %v", w.Structured["others"])
			}
			if !strings.Contains(w.Text, "(dev)") {
				t.Errorf("the dev server's line lacks its name:\n%s", w.Text)
			}
			again := got["dev-again"]
			if again.Structured["session_id"] != got["dev"].Structured["session_id"] || again.Structured["existing"] != true ||
				!strings.Contains(again.Text, "already running") {
				t.Errorf("exec_command name dev started a duplicate:\n%s", again.Text)
			}
			if got["poll-dev"].IsError || got["poll-dev"].Structured["session_id"] != got["dev"].Structured["session_id"] {
				t.Errorf("write_stdin session_id dev:\n%s", got["poll-dev"].Text)
			}
			// The dev server, found again by name and port.
			var port int
			if _, o, ok := strings.Cut(got["dev"].Text, "dev-listening "); !ok || fmtSscan(o, &port) != nil {
				t.Fatalf("dev server did not say its port:\n%s", got["dev"].Text)
			}
			found := false
			sessions, _ := got["list"].Structured["sessions"].([]any)
			for _, x := range sessions {
				s, _ := x.(map[string]any)
				if s["name"] == "dev" {
					ports, _ := s["ports"].([]any)
					found = len(ports) == 1 && ports[0] == float64(port) && s["rss_bytes"].(float64) > 0
				}
			}
			if !found || !strings.Contains(got["list"].Text, fmt.Sprint(port)) {
				t.Errorf("list_sessions does not show the dev server by name and port %d:\n%s", port, got["list"].Text)
			}
			if !got["bad-until"].IsError || !strings.Contains(got["bad-until"].Text, "wait_for") {
				t.Errorf("until pattern without wait_for: %s", got["bad-until"].Text)
			}
			w2 := got["wait2"]
			if w2.Structured["session_id"] != got["tests"].Structured["session_id"] || !strings.Contains(w2.Text, "PASS") {
				t.Errorf("second wait (ids as numbers and names):\n%s", w2.Text)
			}
			if got["kill-dev"].IsError {
				t.Errorf("kill_session dev: %s", got["kill-dev"].Text)
			}
		})
	}
}

// TestMCPResources: sessions are resources; a subscribed client hears that a session
// waits for input and that it exited, and the list follows sessions coming and going,
// without polling; a long call with a progressToken reports the output so far.
func TestMCPResources(t *testing.T) {
	t.Parallel()
	for _, mode := range [][]string{{"mcp"}, {"mcp", "--embedded"}} {
		t.Run(strings.Join(mode, "-"), func(t *testing.T) {
			t.Parallel()
			build, ask, slow := mkfifo(t), mkfifo(t), mkfifo(t)
			const uri1, uri2 = "ptyhub://session/1", "ptyhub://session/2"
			steps := []map[string]any{
				tool("build", "exec_command", map[string]any{"cmd": "echo compiling; cat '" + build + "' >/dev/null; echo built; exit 4", "yield_time_ms": 0}),
				{"step": "listed", "notification": "notifications/resources/list_changed"},
				{"step": "list", "resources": true},
				{"step": "sub1", "subscribe": uri1},
				{"step": "release", "release": build},
				{"step": "exited", "notification": "notifications/resources/updated", "uri": uri1},
				{"step": "read1", "read": uri1},
				tool("ask", "exec_command", map[string]any{"cmd": "cat '" + ask + "' >/dev/null; read -p 'Deploy? [y/n] ' a", "yield_time_ms": 0}),
				{"step": "sub2", "subscribe": uri2},
				{"step": "release2", "release": ask},
				{"step": "waits", "notification": "notifications/resources/updated", "uri": uri2},
				tool("rm", "kill_session", map[string]any{"session_id": "1", "remove": true}),
				{"step": "list2", "listedWithout": uri1},
				{"step": "screen", "read": uri2 + "/screen"},
			}
			long := tool("long", "exec_command", map[string]any{"cmd": "echo working-1; cat '" + slow + "' >/dev/null; echo finished", "yield_time_ms": 60000})
			long["async"], long["progress"] = true, true
			steps = append(steps, long,
				map[string]any{"step": "progressed", "notification": "notifications/progress"},
				map[string]any{"step": "release3", "release": slow},
				map[string]any{"await": "long"})
			got, notes := runNotify(t, mode, steps)
			if p := got["progressed"]; p.Error != "" || !strings.Contains(string(p.Result), `"message":"working-1"`) {
				t.Errorf("no progress with the last line: %s %s", p.Result, p.Error)
			}
			if !strings.Contains(got["long"].Text, "finished") {
				t.Errorf("the call with progress: %s", got["long"].Text)
			}
			updated2 := 0
			for _, n := range notes {
				if n.Notification == "notifications/progress" && n.Params["progress"].(float64) <= 0 {
					t.Errorf("progress %v", n.Params)
				}
				if n.Notification == "notifications/resources/updated" && n.Params["uri"] == uri2 {
					updated2++
				}
			}
			// Session 2 waits at its question from then on: one notification, not one
			// each time the watch restarts.
			if updated2 != 1 {
				t.Errorf("%d notifications/resources/updated for %s, want 1", updated2, uri2)
			}
			if !strings.Contains(string(got["list"].Result), uri1) {
				t.Errorf("resources/list lacks %s: %s", uri1, got["list"].Result)
			}
			if got["exited"].Error != "" || got["waits"].Error != "" {
				t.Errorf("no resources/updated: exit %q, waiting %q", got["exited"].Error, got["waits"].Error)
			}
			var rd struct {
				Contents []struct{ URI, MimeType, Text string }
			}
			json.Unmarshal(got["read1"].Result, &rd)
			if len(rd.Contents) != 2 || !strings.Contains(rd.Contents[0].Text, "compiling\nbuilt") || rd.Contents[1].URI != uri1+"/screen" {
				t.Errorf("resources/read %s: %s", uri1, got["read1"].Result)
			}
			if strings.Contains(string(got["list2"].Result), `"`+uri1+`"`) || !strings.Contains(string(got["list2"].Result), uri2) {
				t.Errorf("after removing session 1, resources/list: %s", got["list2"].Result)
			}
			json.Unmarshal(got["screen"].Result, &rd)
			if len(rd.Contents) != 1 || !strings.Contains(rd.Contents[0].Text, "Deploy? [y/n]") {
				t.Errorf("screen of %s: %s", uri2, got["screen"].Result)
			}
		})
	}
}
