package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/session"
)

// fakeService records calls and answers from functions the test sets.
type fakeService struct {
	exec   func(context.Context, session.ExecRequest) (*session.Result, error)
	write  func(context.Context, session.WriteRequest) (*session.Result, error)
	read   func(context.Context, session.ReadRequest) (*session.Result, error)
	list   func(context.Context) (*session.ListResult, error)
	kill   func(context.Context, session.KillRequest) (*session.KillResult, error)
	resize func(context.Context, session.ResizeRequest) (*session.ResizeResult, error)
	wait   func(context.Context, session.WaitRequest) (*session.WaitResult, error)
	ask    func(context.Context, session.AskRequest) (*session.AskResult, error)

	mu    sync.Mutex
	calls []any
}

func (f *fakeService) record(v any) {
	f.mu.Lock()
	f.calls = append(f.calls, v)
	f.mu.Unlock()
}

func (f *fakeService) Exec(ctx context.Context, r session.ExecRequest) (*session.Result, error) {
	f.record(r)
	if f.exec == nil {
		code := 0
		return &session.Result{SessionID: "1", State: session.StateExited, ExitCode: &code,
			ReturnedBecause: session.BecauseExit, Output: "hi\n", ChunkID: "c1"}, nil
	}
	return f.exec(ctx, r)
}
func (f *fakeService) Write(ctx context.Context, r session.WriteRequest) (*session.Result, error) {
	f.record(r)
	return f.write(ctx, r)
}
func (f *fakeService) Read(ctx context.Context, r session.ReadRequest) (*session.Result, error) {
	f.record(r)
	return f.read(ctx, r)
}
func (f *fakeService) List(ctx context.Context) (*session.ListResult, error) {
	f.record("list")
	return f.list(ctx)
}
func (f *fakeService) Kill(ctx context.Context, r session.KillRequest) (*session.KillResult, error) {
	f.record(r)
	return f.kill(ctx, r)
}
func (f *fakeService) Resize(ctx context.Context, r session.ResizeRequest) (*session.ResizeResult, error) {
	f.record(r)
	return f.resize(ctx, r)
}

func (f *fakeService) Watch(ctx context.Context, r session.WatchRequest) (*session.WatchResult, error) {
	<-ctx.Done() // nothing ever changes
	return nil, ctx.Err()
}

func (f *fakeService) Wait(ctx context.Context, r session.WaitRequest) (*session.WaitResult, error) {
	f.record(r)
	return f.wait(ctx, r)
}

func (f *fakeService) AskHuman(ctx context.Context, r session.AskRequest) (*session.AskResult, error) {
	f.record(r)
	return f.ask(ctx, r)
}

// connect serves svc on an in-memory transport and returns a connected Go client.
func connect(t *testing.T, svc session.Service, opts Options) *mcp.ClientSession {
	t.Helper()
	return connectClient(t, svc, opts, nil, nil)
}

// connectClient is connect with the client's options and its session's (nil: the SDK's
// defaults). The test's cleanup closes the client and waits for Serve to return.
func connectClient(t *testing.T, svc session.Service, opts Options, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	srv := New(svc, opts)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, copts)
	cs, err := c.Connect(ctx, ct, sopts)
	if err != nil {
		cancel()
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after the client closed")
		}
	})
	return cs
}

// call calls a tool and fails the test on a protocol error. Only from the test's own
// goroutine (it calls t.Fatalf); other goroutines use callErr.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := callErr(cs, name, args)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// callErr calls a tool; safe from any goroutine.
func callErr(cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: protocol error: %w", name, err)
	}
	return res, nil
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestListTools(t *testing.T) {
	t.Parallel()
	cs := connect(t, &fakeService{}, Options{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"exec_command":   {"cmd", "argv", "workdir", "shell", "login", "tty", "env", "clear_env", "stdin", "close_stdin", "rows", "cols", "yield_time_ms", "max_output_tokens", "wait_for", "timeout_ms", "profile", "name"},
		"write_stdin":    {"session_id", "chars", "keys", "close_stdin", "yield_time_ms", "max_output_tokens", "wait_for"},
		"read_output":    {"session_id", "view", "from", "to", "tail_lines", "max_output_tokens"},
		"list_sessions":  {},
		"kill_session":   {"session_id", "signal", "remove"},
		"resize_session": {"session_id", "rows", "cols"},
		"wait_sessions":  {"session_ids", "until", "wait_for", "timeout_ms", "max_output_tokens"},
		"ask_human":      {"session_id", "message", "timeout_ms"},
	}
	got := map[string]bool{}
	for _, tool := range res.Tools {
		got[tool.Name] = true
		props, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
		schema, _ := tool.InputSchema.(map[string]any)
		if schema["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties = %v, want false", tool.Name, schema["additionalProperties"])
		}
		properties, _ := schema["properties"].(map[string]any)
		for _, p := range props {
			if _, ok := properties[p]; !ok {
				t.Errorf("%s: schema lacks property %q", tool.Name, p)
			}
		}
		for name, p := range properties {
			if typ, _ := p.(map[string]any)["type"].(string); typ == "" {
				t.Errorf("%s.%s: type %v, want one plain type", tool.Name, name, p.(map[string]any)["type"])
			}
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", tool.Name)
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("tool %q not listed", name)
		}
	}
}

func TestToolResults(t *testing.T) {
	t.Parallel()
	code := 0
	running := &session.Result{SessionID: "3", State: session.StateRunning, ReturnedBecause: session.BecauseWaitingForInput,
		Output: ">>> ", ChunkID: "w1"}
	f := &fakeService{
		write: func(context.Context, session.WriteRequest) (*session.Result, error) { return running, nil },
		read: func(context.Context, session.ReadRequest) (*session.Result, error) {
			return &session.Result{SessionID: "3", State: session.StateExited, ExitCode: &code, ReturnedBecause: session.BecauseRead}, nil
		},
		list: func(context.Context) (*session.ListResult, error) {
			return &session.ListResult{Sessions: []session.Info{{SessionID: "3", PID: 10, State: session.StateRunning, Command: "python3"}}}, nil
		},
		kill: func(context.Context, session.KillRequest) (*session.KillResult, error) {
			return &session.KillResult{SessionID: "3", State: session.StateExited, Signal: "SIGHUP"}, nil
		},
		resize: func(_ context.Context, r session.ResizeRequest) (*session.ResizeResult, error) {
			return &session.ResizeResult{SessionID: r.SessionID, Rows: r.Rows, Cols: r.Cols}, nil
		},
	}
	cs := connect(t, f, Options{})
	tests := []struct {
		tool     string
		args     map[string]any
		wantText string
		wantKey  string // a key of structuredContent
	}{
		{"exec_command", map[string]any{"cmd": "echo hi"}, "Process exited with code 0\nOutput:\nhi\n", "exit_code"},
		{"write_stdin", map[string]any{"session_id": "3", "chars": "1+1\n"}, "Waiting for input\nOutput:\n>>> ", "returned_because"},
		{"read_output", map[string]any{"session_id": "3", "view": "raw"}, "Process exited with code 0", "next_offset"},
		{"list_sessions", map[string]any{}, "python3", "sessions"},
		{"kill_session", map[string]any{"session_id": "3"}, "Session 3 ended: killed by signal SIGHUP", "removed"},
		{"resize_session", map[string]any{"session_id": "3", "rows": 40, "cols": 100}, "Session 3 resized to 40 rows x 100 columns", "rows"},
	}
	for _, tt := range tests {
		res := call(t, cs, tt.tool, tt.args)
		if res.IsError {
			t.Errorf("%s: isError: %s", tt.tool, text(res))
			continue
		}
		if got := text(res); !strings.Contains(got, tt.wantText) {
			t.Errorf("%s: text %q does not contain %q", tt.tool, got, tt.wantText)
		}
		sc, ok := res.StructuredContent.(map[string]any)
		if !ok {
			t.Errorf("%s: structuredContent = %T, want an object", tt.tool, res.StructuredContent)
			continue
		}
		if _, ok := sc[tt.wantKey]; !ok {
			t.Errorf("%s: structuredContent lacks %q: %v", tt.tool, tt.wantKey, sc)
		}
	}
	// A numeric session_id (as Codex's write_stdin takes) is accepted.
	if res := call(t, cs, "write_stdin", map[string]any{"session_id": 3}); res.IsError {
		t.Errorf("numeric session_id: %s", text(res))
	}
	// The typed inputs reached the service.
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.calls[0].(session.ExecRequest); !ok || r.Cmd != "echo hi" {
		t.Errorf("exec got %#v", f.calls[0])
	}
	if r, ok := f.calls[5].(session.ResizeRequest); !ok || r.Rows != 40 || r.Cols != 100 {
		t.Errorf("resize got %#v", f.calls[5])
	}
	if r, ok := f.calls[6].(session.WriteRequest); !ok || r.SessionID != "3" {
		t.Errorf("numeric session_id: write got %#v", f.calls[6])
	}
}

// EDGE 62, 66: the schema rejects unknown properties and wrong types before the service
// sees them, as tool errors naming the problem.
func TestBadArguments(t *testing.T) {
	t.Parallel()
	f := &fakeService{}
	cs := connect(t, f, Options{})
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"exec_command", map[string]any{"cmd": "ls", "yield_ms": 5}, "yield_ms"},
		{"exec_command", map[string]any{"cmd": "ls", "yield_time_ms": "abc"}, "yield_time_ms"},
		{"exec_command", map[string]any{"cmd": "ls", "yield_time_ms": 1.5}, "yield_time_ms"},
		{"exec_command", map[string]any{"cmd": 5}, "cmd"},
		{"exec_command", map[string]any{"argv": "ls -l"}, "argv"},
		{"exec_command", map[string]any{"cmd": "ls", "env": map[string]any{"A": 1}}, "env"},
		{"write_stdin", map[string]any{"chars": "x"}, "session_id"},
		{"list_sessions", map[string]any{"all": true}, "all"},
		{"resize_session", map[string]any{"session_id": "1", "rows": 10}, "cols"},
		{"kill_session", map[string]any{"session_id": "1", "sig": "INT"}, "sig"},
		{"exec_command", map[string]any{"cmd": "ls", "yield_time_ms": 9.3e18}, "yield_time_ms"},
	}
	for _, tt := range tests {
		res := call(t, cs, tt.tool, tt.args)
		if !res.IsError {
			t.Errorf("%s(%v): not an error: %s", tt.tool, tt.args, text(res))
			continue
		}
		if got := text(res); !strings.Contains(got, tt.want) {
			t.Errorf("%s(%v): error %q does not name %q", tt.tool, tt.args, got, tt.want)
		}
	}
	f.mu.Lock()
	if len(f.calls) != 0 {
		t.Errorf("service was called with bad arguments: %v", f.calls)
	}
	f.mu.Unlock()
	res := call(t, cs, "exec_command", map[string]any{"cmd": "ls", "yield_ms": 5})
	want := `Invalid arguments for exec_command: unexpected additional properties ["yield_ms"]. Its arguments are: cmd, argv,`
	if !strings.HasPrefix(text(res), want) {
		t.Errorf("error text %q, want prefix %q", text(res), want)
	}
	// null means "absent": the default applies.
	res = call(t, cs, "exec_command", map[string]any{"cmd": "ls", "yield_time_ms": nil, "tty": nil, "argv": nil, "rows": nil})
	if res.IsError {
		t.Errorf("null optional arguments: %s", text(res))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.calls[len(f.calls)-1].(session.ExecRequest); r.YieldTimeMs != nil || r.TTY != nil || r.Argv != nil || r.Cmd != "ls" {
		t.Errorf("nulls reached the service as %+v", r)
	}
}

func TestServiceErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want []string
	}{
		{fmt.Errorf("%w: workdir /nope does not exist", session.ErrInvalid), []string{"workdir /nope does not exist", "Fix the argument"}},
		{fmt.Errorf("%w %q", session.ErrNotFound, "77"), []string{"77", "list_sessions"}},
		{fmt.Errorf("write to session 3: %w", session.ErrExited), []string{"session 3", "read_output"}},
		{fmt.Errorf("%w (64 sessions)", session.ErrLimit), []string{"64 sessions", "kill_session"}},
		{fmt.Errorf("reaper: broken pipe"), []string{"ptyhub error: reaper: broken pipe"}},
		// A message that already says what to do gets no second hint.
		{fmt.Errorf("%w 9: see list_sessions", session.ErrNotFound), []string{"see list_sessions"}},
	}
	for _, tt := range tests {
		f := &fakeService{write: func(context.Context, session.WriteRequest) (*session.Result, error) { return nil, tt.err }}
		cs := connect(t, f, Options{})
		res := call(t, cs, "write_stdin", map[string]any{"session_id": "3"})
		if !res.IsError {
			t.Errorf("%v: not a tool error", tt.err)
			continue
		}
		got := text(res)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: error text %q lacks %q", tt.err, got, w)
			}
		}
		if strings.Count(got, "list_sessions") > 1 {
			t.Errorf("%v: hint repeated: %q", tt.err, got)
		}
	}
}

// EDGE 61: a long yield does not block other calls, and cancelling a call (MCP
// notifications/cancelled) cancels the service's context without any other effect.
func TestConcurrentAndCancel(t *testing.T) {
	t.Parallel()
	blocked := make(chan struct{})
	cancelled := make(chan error, 1)
	f := &fakeService{
		write: func(ctx context.Context, r session.WriteRequest) (*session.Result, error) {
			if r.SessionID == "slow" {
				close(blocked)
				<-ctx.Done()
				cancelled <- ctx.Err()
				return nil, ctx.Err()
			}
			return &session.Result{SessionID: r.SessionID, State: session.StateRunning, ReturnedBecause: session.BecauseDeadline}, nil
		},
	}
	cs := connect(t, f, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	slowDone := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_stdin", Arguments: map[string]any{"session_id": "slow", "yield_time_ms": 30000}})
		slowDone <- err
	}()
	<-blocked
	// Many calls while the slow one waits.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := callErr(cs, "write_stdin", map[string]any{"session_id": fmt.Sprint(i)})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			} else if res.IsError {
				t.Errorf("call %d: %s", i, text(res))
			}
		}()
	}
	wg.Wait()
	cancel()
	select {
	case err := <-cancelled:
		if err == nil {
			t.Error("service context not cancelled")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling the MCP call did not cancel the service call")
	}
	<-slowDone
	// The connection still serves.
	if res := call(t, cs, "write_stdin", map[string]any{"session_id": "x"}); res.IsError {
		t.Errorf("after cancel: %s", text(res))
	}
}

func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	f := &fakeService{write: func(ctx context.Context, r session.WriteRequest) (*session.Result, error) {
		started <- struct{}{}
		<-release
		return &session.Result{SessionID: r.SessionID, State: session.StateRunning}, nil
	}}
	cs := connect(t, f, Options{MaxInFlight: 2})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := callErr(cs, "write_stdin", map[string]any{"session_id": "1"}); err != nil {
				t.Error(err)
			}
		}()
	}
	<-started
	<-started
	res := call(t, cs, "write_stdin", map[string]any{"session_id": "1"})
	if !res.IsError || !strings.Contains(text(res), "too many tool calls") {
		t.Errorf("third call: isError=%v %q", res.IsError, text(res))
	}
	close(release)
	wg.Wait()
}

// Serve's context ending cancels in-flight calls and returns promptly.
func TestServeShutdown(t *testing.T) {
	t.Parallel()
	inCall := make(chan struct{})
	f := &fakeService{write: func(ctx context.Context, r session.WriteRequest) (*session.Result, error) {
		close(inCall)
		<-ctx.Done()
		return &session.Result{SessionID: r.SessionID, State: session.StateRunning, ReturnedBecause: session.BecauseCancelled}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- New(f, Options{}).Serve(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_stdin", Arguments: map[string]any{"session_id": "1", "yield_time_ms": 600000}})
	<-inCall
	start := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != context.Canceled {
			t.Errorf("Serve = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("shutdown took %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

func TestStructuredContentIsResultJSON(t *testing.T) {
	t.Parallel()
	code, tokens := 2, 14873
	want := &session.Result{SessionID: "7", UUID: "0190", State: session.StateExited, ExitCode: &code,
		ReturnedBecause: session.BecauseExit, WallTimeMs: 12.5, Output: "x", OriginalTokenCount: &tokens,
		TruncatedRange: &[2]int64{10, 20}, NextOffset: 99, ChunkID: "abc",
		Notices: session.Notices{EndedSinceLastCall: []session.Ended{{SessionID: "4", Command: "make", ExitCode: &code}}}}
	f := &fakeService{exec: func(context.Context, session.ExecRequest) (*session.Result, error) { return want, nil }}
	cs := connect(t, f, Options{})
	res := call(t, cs, "exec_command", map[string]any{"argv": []string{"make"}})
	raw, _ := json.Marshal(res.StructuredContent)
	var got session.Result
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(&got)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("structuredContent:\n%s\nwant:\n%s", gotJSON, wantJSON)
	}
	if text(res) != want.Text() {
		t.Errorf("text content:\n%s\nwant:\n%s", text(res), want.Text())
	}
}

// TestCodexArguments: the arguments of Codex's own exec_command that ptyhub has no use for
// are accepted and ignored with a warning; any other unknown argument is still an error.
func TestCodexArguments(t *testing.T) {
	t.Parallel()
	f := &fakeService{}
	cs := connect(t, f, Options{})
	res := call(t, cs, "exec_command", map[string]any{"cmd": "ls", "justification": "Do you want to list?",
		"sandbox_permissions": "require_escalated", "prefix_rule": []string{"ls"}})
	if res.IsError {
		t.Fatalf("Codex's arguments refused: %s", text(res))
	}
	want := "ignored justification, prefix_rule, sandbox_permissions"
	if !strings.Contains(text(res), want) {
		t.Errorf("text %q lacks the warning %q", text(res), want)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), want) {
		t.Errorf("structuredContent %s lacks the warning %q", b, want)
	}
	res = call(t, cs, "exec_command", map[string]any{"cmd": "ls", "justification": "x", "yield_ms": 5})
	if !res.IsError || !strings.Contains(text(res), "yield_ms") || strings.Contains(text(res), "justification") {
		t.Errorf("an unknown argument beside a Codex one: %v %s", res.IsError, text(res))
	}
	res = call(t, cs, "write_stdin", map[string]any{"session_id": "1", "justification": "x"})
	if !res.IsError || !strings.Contains(text(res), "justification") {
		t.Errorf("write_stdin has no Codex-only arguments; justification must be refused: %v %s", res.IsError, text(res))
	}
}

// A write refused by a session that exited with unread output tells the model to poll it
// with write_stdin (read_output would leave that output unread and the exit unreported);
// without unread output, to read its output with read_output.
func TestToolErrorExited(t *testing.T) {
	t.Parallel()
	unread := fmt.Errorf("%w: session 3 (cat) exited with code 0; nothing was written; %s", session.ErrExited, session.ExitedUnread)
	if msg := toolError(unread).Error(); !strings.Contains(msg, "Poll it with write_stdin without input") {
		t.Errorf("unread output: %q", msg)
	}
	read := fmt.Errorf("%w: session 3 (cat) exited with code 0; nothing was written", session.ErrExited)
	if msg := toolError(read).Error(); !strings.Contains(msg, "read_output") || strings.Contains(msg, "write_stdin") {
		t.Errorf("nothing unread: %q", msg)
	}
}

// TestNormalizeArgumentsCommonCall: the common call (a session id as a string, nothing
// to forgive) is passed on as it is without being decoded, while a number id, with any
// spacing, is still turned into its string.
func TestNormalizeArgumentsCommonCall(t *testing.T) {
	common := json.RawMessage(`{"session_id":"1","chars":"1+1\n","wait_for":">>> $"}`)
	if n := testing.AllocsPerRun(100, func() { normalizeArguments("write_stdin", common) }); n != 0 {
		t.Errorf("the common call allocates %v times", n)
	}
	for _, args := range []string{`{"session_id":7}`, `{"chars":"x", "session_id" : 12}`, "{\"session_id\":\n3}",
		`{"chars":"\"session_id\"","session_id":5}`} {
		out, _ := normalizeArguments("write_stdin", json.RawMessage(args))
		var m map[string]any
		if json.Unmarshal(out, &m) != nil {
			t.Fatalf("%s: %s", args, out)
		}
		if _, ok := m["session_id"].(string); !ok {
			t.Errorf("%s: session_id stayed a number: %s", args, out)
		}
	}
	out, _ := normalizeArguments("wait_sessions", json.RawMessage(`{"session_ids":[1,"2"]}`))
	if string(out) != `{"session_ids":["1","2"]}` {
		t.Errorf("session_ids: %s", out)
	}
}
