package ptyhub_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
)

// rawAgent drives `ptyhub mcp` with raw JSON-RPC lines, as a client that sends what it
// likes would: bytes no SDK client produces.
type rawAgent struct {
	t      *testing.T
	cmd    *osexec.Cmd
	in     io.WriteCloser
	lines  chan string
	stderr *testtool.Buffer
}

func (h *svHub) rawAgent(args ...string) *rawAgent {
	h.t.Helper()
	cmd := osexec.Command(h.bin, append([]string{"mcp"}, args...)...)
	cmd.Env, cmd.Dir = append(h.env, "PWD="+h.dir), h.dir
	stderr := &testtool.Buffer{}
	cmd.Stderr = stderr
	in, out := testtool.StartPiped(h.t, cmd)
	a := &rawAgent{t: h.t, cmd: cmd, in: in, lines: make(chan string, 64), stderr: stderr}
	// Reads stdout until ptyhub mcp closes it.
	go func() {
		br := bufio.NewReaderSize(out, 1<<20)
		for {
			l, err := br.ReadString('\n')
			if l != "" {
				a.lines <- l
			}
			if err != nil {
				close(a.lines)
				return
			}
		}
	}()
	h.t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	a.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	a.recv()
	a.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return a
}

func (a *rawAgent) send(line string) {
	a.t.Helper()
	if _, err := io.WriteString(a.in, line+"\n"); err != nil {
		a.t.Fatalf("ptyhub mcp's stdin: %v (stderr: %s)", err, a.stderr)
	}
}

// recv returns the next response line (notifications are skipped) and its id as written.
func (a *rawAgent) recv() (line string, id string, m map[string]json.RawMessage) {
	a.t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-a.lines:
			if !ok {
				a.t.Fatalf("ptyhub mcp closed its stdout (stderr: %s)", a.stderr)
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				a.t.Fatalf("ptyhub mcp wrote a line that is not JSON: %q", l)
			}
			if rid, ok := m["id"]; ok {
				return l, string(rid), m
			}
		case <-timeout:
			a.t.Fatalf("no response from ptyhub mcp (stderr: %s)", a.stderr)
		}
	}
}

// call sends a tools/call with id and returns its result's text and whether it is a
// tool error.
func (a *rawAgent) call(id int, tool string, args any) (text string, isError bool, structured map[string]any) {
	a.t.Helper()
	js, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	a.send(string(js))
	line, rid, m := a.recv()
	if rid != fmt.Sprint(id) {
		a.t.Fatalf("response %s to request %d", line, id)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(m["result"], &res); err != nil || len(res.Content) == 0 {
		a.t.Fatalf("%s: response %s", tool, line)
	}
	return res.Content[0].Text, res.IsError, res.StructuredContent
}

// Malformed and hostile input to ptyhub mcp is answered, one response for each request
// with the request's id as written, and never ends the server: after each, a normal call
// works and the agent's earlier session still runs.
func TestMCPHostileInput(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	a := h.rawAgent()
	_, isErr, first := a.call(1, "exec_command", map[string]any{"cmd": "echo up; exec sleep 1000", "wait_for": "^up", "yield_time_ms": 60000})
	if isErr || first["state"] != "running" {
		t.Fatalf("first session: %v", first)
	}
	sid := first["session_id"].(string)
	next := 100
	stillServing := func(what string) {
		t.Helper()
		next++
		text, isErr, st := a.call(next, "write_stdin", map[string]any{"session_id": sid, "yield_time_ms": 0})
		if isErr || st["state"] != "running" {
			t.Fatalf("after %s: the earlier session: %s", what, text)
		}
		if err := syscall.Kill(a.cmd.Process.Pid, 0); err != nil {
			t.Fatalf("after %s: ptyhub mcp is gone", what)
		}
	}

	// resources/read of URIs with control characters: the SDK's not-found error quoted
	// them with %q, not JSON, and the failed write ended ptyhub mcp.
	for i, uri := range []string{`ptyhub://session/1\u0000`, `ptyhub://session/\u0001x`, `ptyhub://x\u001b[31m`,
		`x\u007f`, `\u0000`, `ptyhub://session/` + sid + `\u001b/screen`} {
		id := 10 + i
		a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"%s"}}`, id, uri))
		line, rid, m := a.recv()
		if rid != fmt.Sprint(id) || m["error"] == nil {
			t.Errorf("resources/read %s: %s", uri, line)
		}
		stillServing("resources/read " + uri)
	}

	// Ids are echoed as written: the SDK turned these into int64.
	for _, id := range []string{"123456789012345678901234567890", "1.5", "9007199254740993", "-0", "1e2", `"\u0041"`, `"é"`} {
		a.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if line, rid, m := a.recv(); rid != id || m["result"] == nil {
			t.Errorf("ping with id %s: %s", id, line)
		}
	}
	stillServing("odd ids")

	// Arguments over their size limits are refused before any work is done on them, with
	// the argument and the limit named: a 15 MiB wait_for took 400 MB to compile (a line
	// of 15 MiB is now refused whole, below).
	huge := strings.Repeat("a", 4<<20)
	for i, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"exec_command", map[string]any{"cmd": "true", "wait_for": huge}, "wait_for is 4194304 bytes, more than the limit of 16384"},
		{"write_stdin", map[string]any{"session_id": sid, "wait_for": huge}, "wait_for is 4194304 bytes"},
		{"wait_sessions", map[string]any{"wait_for": huge}, "wait_for is 4194304 bytes"},
		{"exec_command", map[string]any{"cmd": strings.Repeat("x", 200<<10)}, "cmd is 204800 bytes, more than the limit of 131071"},
		{"exec_command", map[string]any{"argv": make([]string, 5000)}, "argv is 5000 entries, more than the limit of 4096"},
		{"exec_command", map[string]any{"cmd": "true", "env": map[string]string{"BIG": strings.Repeat("v", 200<<10)}}, `env["BIG"] is 204804 bytes`},
		{"exec_command", map[string]any{"cmd": "true", "name": strings.Repeat("n", 1000)}, "name is 1000 bytes, more than the limit of 64"},
		{"read_output", map[string]any{"session_id": strings.Repeat("1", 5000)}, "session_id is 5000 bytes, more than the limit of 1024"},
		{"kill_session", map[string]any{"session_id": sid, "signal": strings.Repeat("S", 100)}, "signal is 100 bytes, more than the limit of 64"},
	} {
		text, isErr, _ := a.call(200+i, c.tool, c.args)
		if !isErr || !strings.Contains(text, c.want) {
			t.Errorf("%s with an argument over its limit: %q, want an error with %q", c.tool, trimmed(text), c.want)
		}
		stillServing(c.tool + " over a limit")
	}

	// A line over the line limit (a 15 MiB wait_for) is discarded as it is read and
	// answered with its id, read from its start.
	a.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"true","wait_for":"` + strings.Repeat("y", 15<<20) + `"}}}`)
	if line, rid, m := a.recv(); rid != `"long"` || m["error"] == nil || !strings.Contains(line, "longer than the limit of 8388608 bytes") {
		t.Errorf("a line over the limit: %.300s", line)
	}
	stillServing("a line over the limit")
}

func trimmed(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// Requests already in the pipe when stdin ends are answered before ptyhub mcp exits
// (it answered none in 4 runs of 5), and the agent's sessions still end after.
func TestMCPPipedRequestsAnswered(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	for run := range 5 {
		marker := fmt.Sprintf("piped-%d-%d", os.Getpid(), run)
		input := strings.Join([]string{
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"0"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"sleep 1000","env":{"PTYHUB_TEST_MARKER":"` + marker + `"},"yield_time_ms":0}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		}, "\n") + "\n"
		cmd := osexec.Command(h.bin, "mcp")
		cmd.Env, cmd.Dir = append(h.env, "PWD="+h.dir), h.dir
		cmd.Stdin = strings.NewReader(input)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %d: %v (stderr: %s)", run, err, stderr.String())
		}
		answered := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(l), &m) == nil && m["id"] != nil {
				answered[string(m["id"])] = true
			}
		}
		for _, id := range []string{"0", "1", "2", "3"} {
			if !answered[id] {
				t.Errorf("run %d: request %s not answered; stdout:\n%s", run, id, out)
			}
		}
		svWait(t, "the piped agent's session to end", func() bool {
			return len(proctest.WithEnv("PTYHUB_TEST_MARKER="+marker)) == 0
		})
	}
}

// kill_session of a session with hundreds of jobs names a few and counts the rest, like
// any output the agent gets.
func TestMCPKillSurvivorsBudget(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	a := h.agent()
	const jobs = 300
	r := a.call("exec_command", map[string]any{
		"cmd":      fmt.Sprintf(`trap '' HUP TERM; for i in $(seq %d); do sleep 1000 & done; echo all-started; wait`, jobs),
		"wait_for": "^all-started", "yield_time_ms": 120000})
	if r["state"] != "running" {
		t.Fatalf("exec: %v", r)
	}
	res, err := a.cs.CallTool(a.ctx, &mcp.CallToolParams{Name: "kill_session", Arguments: map[string]any{"session_id": r["session_id"]}})
	if err != nil || res.IsError {
		t.Fatalf("kill_session: %v %+v", err, res)
	}
	k := res.StructuredContent.(map[string]any)
	listed, _ := k["survivors"].([]any)
	more, _ := k["survivors_more"].(float64)
	text := res.Content[0].(*mcp.TextContent).Text
	if len(listed) > 10 || len(listed)+int(more) < jobs {
		t.Errorf("survivors: %d listed and %v more, want at most 10 and %d in all", len(listed), more, jobs)
	}
	if len(text) > 2000 || !strings.Contains(text, fmt.Sprintf("… %d more", int(more))) {
		t.Errorf("kill_session's text (%d bytes): %s", len(text), trimmed(text))
	}
	svWait(t, "the session's jobs to end", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+r["uuid"].(string))) == 0 })
}

// Many exec_command calls at once from one agent: the session limit holds (never more
// running than the cap), a session whose own exec_command is still waiting is never
// pruned, calls past the limit get an error naming it, and a session pruned later, when
// idle, says so.
func TestMCPSessionLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	const limit, calls = 16, 48
	h := svNew(t)
	a := h.inDir(h.dir, "PTYHUB_MAX_SESSIONS="+fmt.Sprint(limit)).agent()
	gate := filepath.Join(t.TempDir(), "gate")
	// Each session waits for the gate, so every call that started one is still waiting
	// for its wait_for when the others are admitted.
	cmd := fmt.Sprintf(`while [ ! -e '%s' ]; do sleep 0.05; done; echo released; exec sleep 1000`, gate)
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	results := make(chan outcome, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := a.cs.CallTool(a.ctx, &mcp.CallToolParams{Name: "exec_command",
				Arguments: map[string]any{"cmd": cmd, "wait_for": "^released", "yield_time_ms": 120000}})
			results <- outcome{res, err}
		}()
	}
	// Wait until every call has either been refused or started its session; the running
	// count never exceeds the limit meanwhile.
	refused := 0
	var got []outcome
	waitLong(t, "every call admitted or refused", func() bool {
		for len(results) > 0 {
			o := <-results
			got = append(got, o)
			if o.err == nil && o.res.IsError {
				refused++
			}
		}
		running := 0
		for _, s := range a.call("list_sessions", map[string]any{})["sessions"].([]any) {
			if s.(map[string]any)["state"] == "running" {
				running++
			}
		}
		if running > limit {
			t.Fatalf("%d sessions running, the limit is %d", running, limit)
		}
		return refused+running == calls
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(results)
	for o := range results {
		got = append(got, o)
	}
	started, errs := 0, 0
	for _, o := range got {
		if o.err != nil {
			t.Fatalf("exec_command: %v", o.err)
		}
		text := o.res.Content[0].(*mcp.TextContent).Text
		if o.res.IsError {
			errs++
			if !strings.Contains(text, fmt.Sprintf("%d running sessions, the limit of one client", limit)) {
				t.Errorf("refused exec_command: %q, want the limit named", text)
			}
			continue
		}
		started++
		st := o.res.StructuredContent.(map[string]any)
		if st["state"] != "running" || st["pruned"] == true || !strings.Contains(st["output"].(string), "released") {
			t.Errorf("a session whose exec_command was waiting: %s", text)
		}
	}
	if started != limit || errs != calls-limit {
		t.Errorf("%d started and %d refused, want %d and %d", started, errs, limit, calls-limit)
	}
	// Now idle, the least recently used can be pruned for a new session, and says so.
	r := a.call("exec_command", map[string]any{"cmd": "echo one-more"})
	var pruned string
	warns, _ := r["warnings"].([]any)
	for _, e := range warns {
		if w, ok := e.(string); ok && strings.Contains(w, "it is listed as pruned") {
			_, err := fmt.Sscanf(w[strings.Index(w, "session "):], "session %s", &pruned)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if pruned == "" {
		t.Fatalf("no session pruned for the new one: %v", r)
	}
	w := a.call("write_stdin", map[string]any{"session_id": pruned, "yield_time_ms": 60000})
	if w["pruned"] != true || w["state"] != "exited" {
		t.Errorf("the pruned session's result: %v", w)
	}
}

// waitLong polls cond for up to 2 minutes: many sessions starting on a loaded machine.
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
