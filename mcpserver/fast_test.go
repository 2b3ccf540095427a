package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// fastScript drives one server through the same tools/call lines and returns every line
// it wrote, in order. sdkOnly sends every call through the SDK; otherwise the transport
// serves the calls it can. It also returns how many calls the transport served itself.
func fastScript(t *testing.T, sdkOnly bool) ([]string, int64) {
	t.Helper()
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	svc := &fakeService{
		write: func(ctx context.Context, r session.WriteRequest) (*session.Result, error) {
			switch r.Chars {
			case "block":
				// Until the call is cancelled.
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			case "progress":
				// Until the test has seen the progress notification.
				<-release
			case "missing":
				return nil, fmt.Errorf("%w: no session %q", session.ErrNotFound, r.SessionID)
			}
			return &session.Result{SessionID: r.SessionID, State: session.StateRunning,
				ReturnedBecause: session.BecausePattern, Output: "<b>&" + r.Chars + "\n>>> ", ChunkID: "c1", NextOffset: 42}, nil
		},
		list: func(context.Context) (*session.ListResult, error) {
			ago := int64(3)
			return &session.ListResult{Sessions: []session.Info{{SessionID: "1", State: session.StateRunning,
				OutputSize: 10, LastOutputAgoMs: &ago, LastLine: "so far"}}}, nil
		},
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := New(svc, Options{})
	srv.sdkOnly = sdkOnly
	lt := &LineTransport{In: inR, Out: outW}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), lt); outW.Close() }()
	defer func() {
		inW.Close()
		select {
		case <-served:
		case <-time.After(20 * time.Second):
			t.Error("Serve did not return at the end of the input")
		}
	}()
	lines := make(chan string)
	go func() { // ends at the end of the output
		defer close(lines)
		br := bufio.NewReaderSize(outR, 1<<20)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	var got []string
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the output ended")
			}
			got = append(got, l)
			return l
		case <-time.After(20 * time.Second):
			t.Fatal("no line")
		}
		panic("unreachable")
	}
	callLine := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	}

	// A call before initialize.
	send(callLine("1", `{"name":"write_stdin","arguments":{"session_id":"1","chars":"x"}}`))
	recv()
	send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	recv()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for i, params := range []string{
		`{"name":"write_stdin","arguments":{"session_id":"1","chars":"1+1\n","wait_for":">>> $"}}`,
		`{"name":"exec_command","arguments":{"cmd":"echo hi"}}`,
		`{"name":"list_sessions","arguments":{}}`,
		`{"name":"list_sessions"}`,
		`{"name":"list_sessions","arguments":null}`,
		`{"name":"no_such_tool","arguments":{}}`,
		`{"name":"write_stdin","arguments":{"chars":"x"}}`,                                               // missing
		`{"name":"write_stdin","arguments":{"session_id":true}}`,                                         // wrong type
		`{"name":"write_stdin","arguments":{"session_id":"1","chars":5}}`,                                // wrong type
		`{"name":"write_stdin","arguments":{"session_id":"1","yield_ms":5}}`,                             // extra
		`{"name":"write_stdin","arguments":{"session_id":"1","yield_time_ms":-5}}`,                       // out of range
		`{"name":"write_stdin","arguments":{"session_id":"1","chars":null,"wait_for":null}}`,             // null: absent
		`{"name":"write_stdin","arguments":{"session_id":7,"chars":"x"}}`,                                // a number id
		`{"name":"write_stdin","arguments":{"session_id":"9","chars":"missing"}}`,                        // service error
		`{"name":"exec_command","arguments":{"cmd":"ls","justification":"j","sandbox_permissions":"x"}}`, // Codex's
		`{"name":"write_stdin","arguments":{"session_id":"1","chars":"\u00e9<>&\u2028"}}`,
		`{"name":"write_stdin","arguments":"text"}`,
		`{"name":5,"arguments":{}}`,
		`{"Name":"list_sessions","arguments":{}}`,
		`{"name":"list_sessions","arguments":{},"extra":1}`,
		`{"name":"list_sessions","_meta":{"note":[1,2.5,"x"]},"arguments":{}}`,
		`{"arguments":{}}`,
		`[]`,
		`{"name":"write_stdin","arguments":{"session_id":"1","chars":"a","chars":"b"}}`,
	} {
		for _, id := range []string{fmt.Sprint(100 + i), `"s` + fmt.Sprint(i) + `"`} {
			send(callLine(id, params))
			recv()
		}
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call"}`) // no params
	recv()

	// A cancelled call answers with its tool error.
	send(callLine(`"c"`, `{"name":"write_stdin","arguments":{"session_id":"1","chars":"block"}}`))
	<-started
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"test"}}`)
	recv()

	// A call with a progress token: a progress notification while it runs, then its
	// answer (the token string and number alike).
	for _, tok := range []string{`"tok-1"`, `7`} {
		send(callLine(`"p"`, `{"name":"write_stdin","_meta":{"progressToken":`+tok+`},"arguments":{"session_id":"1","chars":"progress"}}`))
		if l := recv(); !strings.Contains(l, `"notifications/progress"`) {
			t.Fatalf("not a progress notification: %s", l)
		}
		release <- struct{}{}
		recv()
	}

	return got, lt.conn.fastCalls.Load()
}

// The transport's own path for tools/call answers every call exactly as the SDK's path
// does: valid calls, unknown tools, missing, invalid, extra and null arguments, odd
// params, a call before initialize, a cancelled call, progress notifications, and the
// client's ids of every shape.
func TestFastPathMatchesSDK(t *testing.T) {
	t.Parallel()
	fast, nFast := fastScript(t, false)
	slow, nSlow := fastScript(t, true)
	if nSlow != 0 {
		t.Errorf("%d calls took the fast path with it switched off", nSlow)
	}
	t.Logf("%d calls on the fast path", nFast)
	if nFast < 30 {
		t.Errorf("only %d calls took the fast path", nFast)
	}
	if len(fast) != len(slow) {
		t.Fatalf("%d lines on the fast path, %d through the SDK", len(fast), len(slow))
	}
	for i := range fast {
		if fast[i] != slow[i] {
			t.Errorf("line %d differs:\nfast: %s sdk:  %s", i, fast[i], slow[i])
		}
	}
	// The script did exercise what it means to.
	all := strings.Join(fast, "")
	for _, want := range []string{"invalid during session initialization", "Invalid arguments for write_stdin",
		`unknown tool \"no_such_tool\"`, "the call was cancelled", `"progressToken":"tok-1"`, `"progressToken":7`,
		"ignored justification, sandbox_permissions", `\u003cb\u003e\u0026`} {
		if !strings.Contains(all, want) {
			t.Errorf("no response contains %q", want)
		}
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal([]byte(fast[2]), &resp) != nil || !strings.Contains(string(resp.Result), `"structuredContent"`) {
		t.Errorf("the first call's response has no structured content: %s", fast[2])
	}
}
