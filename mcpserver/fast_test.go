package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/session"
)

// triple is the per-request _meta of the sessionless protocol, as the Go SDK's client
// sends it on every call.
const triple = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}`

// fastScript drives one server through the same tools/call lines and returns every line
// it wrote, in order. sdkOnly sends every call through the SDK; otherwise the transport
// serves the calls it can. It also returns how many calls the transport served itself.
// The client starts with initialize at version (or, version "discover", with
// server/discover, then sends the sessionless protocol's triple in every call's _meta).
func fastScript(t *testing.T, sdkOnly bool, version string) ([]string, int64) {
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
	discover := version == "discover"
	callLine := func(id, params string) string {
		if discover {
			if strings.Contains(params, `"_meta":{`) {
				params = strings.Replace(params, `"_meta":{`, `"_meta":{`+triple+`,`, 1)
			} else if strings.HasPrefix(params, "{") && params != "{}" {
				params = `{"_meta":{` + triple + `},` + params[1:]
			}
		}
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	}

	// A call before initialize.
	send(callLine("1", `{"name":"write_stdin","arguments":{"session_id":"1","chars":"x"}}`))
	recv()
	if discover {
		send(`{"jsonrpc":"2.0","id":"init","method":"server/discover","params":{"_meta":{` + triple + `}}}`)
		recv()
	} else {
		send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
		recv()
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}

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
		`{"name":"exec_command","name":"list_sessions","arguments":{}}`,
		`{"name":"list_sessions","arguments":{"x":1},"arguments":{}}`,
		`{"name":"list_sessions","arguments":{},"_meta":{"progressToken":"a"},"_meta":{"note":1}}`,
		`{"name":"list_sessions","arguments":{},"NAME":"exec_command"}`,
		`{"na\u006de":"list_sessions","arguments":{}}`,
		`{"name":"list_sessions","arguments":{},"_meta":{"progressToken":"a","progressToken":"b"}}`,
		`{"name":"list_sessions","arguments":{},"_meta":{"progress\u0054oken":"a"}}`,
		`{"name":"list_sessions","arguments":{},"_meta":null}`,
		`{"name":"list_sessions","arguments":{},"_meta":[]}`,
		`{"name":"list_sessions\u0000","arguments":{}}`,
		` {"name" : "list_sessions" ,"arguments" : { } } `,
		`{"name":"write_stdin","arguments":{"session_id":"1","chars":"a\u0000\ud800\udc00\ud800"}}`,
		`[]`,
		`{"name":"write_stdin","arguments":{"session_id":"1","chars":"a","chars":"b"}}`,
		`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"},"arguments":{}}`,
		`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}},"arguments":{}}`,
		`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"arguments":{}}`,
		`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{}}`,
		`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null},"arguments":{}}`,
		`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5}},"arguments":{}}`,
		`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":5}},"arguments":{}}`,
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
// params and _meta, a call before initialize, a cancelled call, progress notifications,
// and the client's ids of every shape; for a client of the classic protocol, one that
// initialized with the multi-round-trip version, and one of the sessionless protocol.
func TestFastPathMatchesSDK(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2025-06-18", "2026-07-28", "discover"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			fastMatchesSDK(t, version)
		})
	}
}

func fastMatchesSDK(t *testing.T, version string) {
	fast, nFast := fastScript(t, false, version)
	slow, nSlow := fastScript(t, true, version)
	if nSlow != 0 {
		t.Errorf("%d calls took the fast path with it switched off", nSlow)
	}
	t.Logf("%d calls on the fast path", nFast)
	if nFast < 35 {
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
	wants := []string{"Invalid arguments for write_stdin",
		`unknown tool \"no_such_tool\"`, "the call was cancelled", `"progressToken":"tok-1"`, `"progressToken":7`,
		"ignored justification, sandbox_permissions", `\u003cb\u003e\u0026`}
	if version == "discover" {
		wants = append(wants, mcp.MetaKeyServerInfo) // the call before discover is served
	} else {
		wants = append(wants, "invalid during session initialization")
	}
	if version != "2025-06-18" {
		wants = append(wants, `"resultType":"complete"`)
	}
	for _, want := range wants {
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

// goClient connects the Go SDK's client to srv over pipes, as `ptyhub mcp` is reached,
// and returns it with the transport srv serves.
func goClient(tb testing.TB, srv *Server) (*mcp.ClientSession, *LineTransport) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	lt := &LineTransport{In: inR, Out: outW}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lt); outW.Close() }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cs.Close()
		cancel()
		select {
		case <-served:
		case <-time.After(20 * time.Second):
			tb.Error("Serve did not return")
		}
	})
	return cs, lt
}

// The Go SDK's own client (which sends the sessionless protocol's _meta triple with
// every call) is served on the fast path.
func TestFastPathGoClient(t *testing.T) {
	t.Parallel()
	svc := &fakeService{write: func(_ context.Context, r session.WriteRequest) (*session.Result, error) {
		return &session.Result{SessionID: r.SessionID, State: session.StateRunning, Output: "2\n>>> "}, nil
	}}
	cs, lt := goClient(t, New(svc, Options{}))
	res := call(t, cs, "write_stdin", map[string]any{"session_id": "1", "chars": "1+1\n"})
	if res.IsError || !strings.Contains(text(res), ">>> ") {
		t.Fatalf("write_stdin: %s", text(res))
	}
	if n := lt.conn.fastCalls.Load(); n != 1 {
		t.Errorf("%d calls on the fast path, want 1", n)
	}
}

// The calls the transport serves run concurrently: a call that waits for a later one
// does not hold it up.
func TestFastPathConcurrent(t *testing.T) {
	t.Parallel()
	second := make(chan struct{})
	svc := &fakeService{write: func(ctx context.Context, r session.WriteRequest) (*session.Result, error) {
		if r.Chars == "first" {
			select {
			case <-second:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		} else {
			close(second)
		}
		return &session.Result{SessionID: r.SessionID, State: session.StateRunning, Output: r.Chars}, nil
	}}
	r := startRPC(t, svc, Options{})
	r.initialize()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_stdin","arguments":{"session_id":"1","chars":"first"}}}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_stdin","arguments":{"session_id":"1","chars":"second"}}}`)
	// Both answer (in either order: the first ends as soon as the second has begun).
	got := map[string]bool{}
	for range 2 {
		resp := r.recv()
		if resp.Error != nil {
			t.Fatalf("id %s: %+v", resp.ID, resp.Error)
		}
		got[string(resp.ID)] = true
	}
	if !got["1"] || !got["2"] {
		t.Errorf("responses for ids %v, want 1 and 2", got)
	}
}

// A client's per-call _meta, the same bytes at every call, is decoded and checked once:
// the calls after the first allocate less than decoding it would; a different triple
// is checked again, an invalid one after a valid one is refused, and a _meta that does
// not decode still leaves the call to the SDK.
func TestMetaDecodedOnce(t *testing.T) {
	valid := `{"name":"list_sessions","_meta":{` + triple + `},"arguments":{}}`
	first, tr, ok := decodeCallParams(json.RawMessage(valid))
	if !ok || !tr {
		t.Fatalf("the Go client's triple: ok %v, triple %v; want both", ok, tr)
	}
	for _, bad := range []string{
		`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5}},"arguments":{}}`,
		`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}},"arguments":{}}`,
		`{"name":"list_sessions","_meta":{` + triple + `,"x":1e400},"arguments":{}}`,
	} {
		if _, _, ok := decodeCallParams(json.RawMessage(bad)); ok {
			t.Errorf("an invalid _meta after a valid one was taken: %s", bad)
		}
	}
	other := strings.Replace(valid, `"name":"t"`, `"name":"u"`, 1)
	if _, tr, ok := decodeCallParams(json.RawMessage(other)); !ok || !tr {
		t.Errorf("another valid triple: ok %v, triple %v; want both", ok, tr)
	}
	again, tr, ok := decodeCallParams(json.RawMessage(valid))
	if !ok || !tr || !reflect.DeepEqual(again.Meta, first.Meta) {
		t.Errorf("the first triple again: ok %v, triple %v, _meta %v; want %v", ok, tr, again.Meta, first.Meta)
	}
	if raceOn {
		return // the race detector's own allocations
	}
	metaOnly := testing.AllocsPerRun(50, func() {
		var m map[string]any
		_ = json.Unmarshal([]byte(`{`+triple+`}`), &m)
	})
	call := testing.AllocsPerRun(50, func() { decodeCallParams(json.RawMessage(valid)) })
	if call >= metaOnly || call > 6 {
		t.Errorf("a call with the same _meta: %.0f allocations, decoding the _meta alone %.0f: it was decoded again", call, metaOnly)
	}
}

// callParamsCases are tools/call params of every shape the fast path meets.
var callParamsCases = []string{
	`{"name":"exec_command","arguments":{"argv":["/bin/true"]}}`,
	`{"_meta":` + goClientMeta + `,"name":"kill_session","arguments":{"session_id":"1","remove":true}}`,
	`{"_meta":{` + triple + `},"name":"list_sessions"}`,
	` { "name" : "list_sessions" , "arguments" : { } } `,
	`{"name":"list_sessions","arguments":null}`,
	`{"name":"list_sessions","arguments":[]}`,
	`{"name":"list_sessions","arguments":"x"}`,
	`{"name":5,"arguments":{}}`,
	`{"name":null}`,
	`{"arguments":{}}`,
	`{}`,
	`{"Name":"list_sessions","arguments":{}}`,
	`{"name":"list_sessions","arguments":{},"extra":1}`,
	`{"name":"list_sessions","ext\u0072a":1}`,
	`{"n\u0061me":"list_sessions"}`,
	`{"name":"list_\u0073essions"}`,
	`{"name":"list_sessions\u0000"}`,
	"{\"name\":\"list_sessions\xff\"}",
	`{"name":"list_sessionsé"}`,
	`{"name":"a","name":"list_sessions"}`,
	`{"name":5,"name":"list_sessions"}`,
	`{"name":"list_sessions","arguments":{},"arguments":{"a":1}}`,
	`{"name":"list_sessions","_meta":null}`,
	`{"name":"list_sessions","_meta":[]}`,
	`{"name":"list_sessions","_meta":{"progressToken":"tok"}}`,
	`{"name":"list_sessions","_meta":{"progressToken":7}}`,
	`{"name":"list_sessions","_meta":{"note":[1,2.5,"x"]}}`,
	`{"name":"list_sessions","_meta":{"x":1e400}}`,
	`{"name":"list_sessions","_meta":{},"_meta":{"x":1}}`,
	`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}`,
	`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
	`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
	`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5}}}`,
	`{"name":"list_sessions","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null}}`,
	`[]`,
	`"x"`,
}

// decodeCallParams reads params as the JSON path alone (decodeCallParamsJSON) does:
// the same verdict, name, arguments and _meta, for params of every shape.
func TestCallParamsScanned(t *testing.T) {
	scanned := 0
	for _, params := range callParamsCases {
		if !json.Valid([]byte(params)) {
			t.Fatalf("not JSON: %s", params)
		}
		if _, _, _, sure := scanCallParams([]byte(params)); sure {
			scanned++
		}
		sameCallParams(t, json.RawMessage(params))
	}
	if scanned < len(callParamsCases)/2 {
		t.Errorf("only %d of %d params scanned", scanned, len(callParamsCases))
	}
	if _, _, _, sure := scanCallParams([]byte(callParamsCases[1])); !sure {
		t.Errorf("the Go client's call is not scanned")
	}
}

func sameCallParams(t *testing.T, params json.RawMessage) {
	t.Helper()
	p, tr, ok := decodeCallParams(params)
	wp, wtr, wok := decodeCallParamsJSON(bytes.TrimSpace(params))
	if ok != wok || tr != wtr {
		t.Fatalf("%s: ok %v, triple %v; the JSON path: ok %v, triple %v", params, ok, tr, wok, wtr)
	}
	if !ok {
		return
	}
	if p.Name != wp.Name || !bytes.Equal(p.Arguments, wp.Arguments) || !reflect.DeepEqual(p.Meta, wp.Meta) {
		t.Errorf("%s: %q %s %v; the JSON path: %q %s %v", params, p.Name, p.Arguments, p.Meta, wp.Name, wp.Arguments, wp.Meta)
	}
}

// FuzzCallParams: decodeCallParams reads any params as the JSON path alone does.
func FuzzCallParams(f *testing.F) {
	for _, params := range callParamsCases {
		f.Add([]byte(params))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) || deeperThan(params, maxParamsDepth) {
			return
		}
		sameCallParams(t, params)
	})
}

// The server's info is added to a result's _meta as the SDK adds it, without a map made
// for each result: a result without _meta gets the one map, written out as the SDK
// writes it; a result with a _meta of its own gets the key added, unless it has one.
func TestServerInfoMetaShared(t *testing.T) {
	impl := &mcp.Implementation{Name: "ptyhub", Version: "1"}
	k := newKnownMeta(impl)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "<x>"}}}
	k.addTo(res)
	want := &mcp.CallToolResult{Content: res.Content}
	want.SetMeta(map[string]any{mcp.MetaKeyServerInfo: impl})
	got, err := encodeResult(res, false, &k)
	if err != nil {
		t.Fatal(err)
	}
	if s := sdkResultBytes(t, want, false); string(got) != s {
		t.Errorf("encoded %s, the SDK %s", got, s)
	}
	own := &mcp.CallToolResult{}
	own.SetMeta(map[string]any{"a": 1})
	k.addTo(own)
	if len(own.Meta) != 2 || own.Meta[mcp.MetaKeyServerInfo] != impl {
		t.Errorf("a result's own _meta: %v", own.Meta)
	}
	other := &mcp.Implementation{Name: "other"}
	own.Meta[mcp.MetaKeyServerInfo] = other
	k.addTo(own)
	if own.Meta[mcp.MetaKeyServerInfo] != other {
		t.Errorf("the result's own server info was replaced: %v", own.Meta)
	}
	if len(k.meta) != 1 {
		t.Errorf("the shared map was written: %v", k.meta)
	}
	if raceOn {
		return
	}
	r := &mcp.CallToolResult{}
	if n := testing.AllocsPerRun(50, func() {
		r.Meta = nil
		k.addTo(r)
	}); n != 0 {
		t.Errorf("adding the server's info to a result without _meta: %.0f allocations", n)
	}
}
