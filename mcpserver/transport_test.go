package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// rpc drives Run over pipes as a stdio client would.
type rpc struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
}

func startRPC(t *testing.T, svc *fakeService, opts Options) *rpc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rpc{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	go func() {
		r.done <- Run(context.Background(), svc, inR, outW, opts)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close() })
	return r
}

func (r *rpc) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r *rpc) recv() response {
	r.t.Helper()
	type lineErr struct {
		line string
		err  error
	}
	ch := make(chan lineErr, 1)
	go func() {
		for {
			l, err := r.out.ReadString('\n')
			if err == nil && strings.Contains(l, `"method":"notifications/`) && !strings.Contains(l, `"id"`) {
				continue // a notification, not the response
			}
			ch <- lineErr{l, err}
			return
		}
	}()
	select {
	case le := <-ch:
		if le.err != nil {
			r.t.Fatalf("read: %v", le.err)
		}
		var resp response
		if err := json.Unmarshal([]byte(le.line), &resp); err != nil {
			r.t.Fatalf("response %q is not JSON: %v", le.line, err)
		}
		return resp
	case <-time.After(20 * time.Second):
		r.t.Fatal("no response")
	}
	panic("unreachable")
}

func (r *rpc) initialize() {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if resp := r.recv(); resp.Error != nil {
		r.t.Fatalf("initialize: %+v", resp.Error)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// EDGE 64: garbage, batches and invalid messages are answered and serving goes on.
func TestTransportBadLines(t *testing.T) {
	t.Parallel()
	r := startRPC(t, &fakeService{}, Options{})
	tests := []struct {
		line   string
		wantID string
		code   int
	}{
		{"garbage", "null", -32700},
		{"\xff\xfe{", "null", -32700},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "null", -32600},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, "7", -32600},
		{`{"id":"x"}`, `"x"`, -32600},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null", -32600},
		{`{"jsonrpc":"2.0","method":"tools/list","id":null,"params":{}}`, "null", -32600},
	}
	for _, tt := range tests {
		r.send(tt.line)
		resp := r.recv()
		if resp.Error == nil || resp.Error.Code != tt.code || string(resp.ID) != tt.wantID {
			t.Errorf("%q: got id %s error %+v, want id %s code %d", tt.line, resp.ID, resp.Error, tt.wantID, tt.code)
		}
	}
	r.send("") // blank lines are skipped silently
	r.initialize()
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if resp := r.recv(); resp.Error != nil || string(resp.ID) != "2" || !strings.Contains(string(resp.Result), "exec_command") {
		t.Errorf("tools/list after bad lines: %+v %s", resp.Error, resp.Result)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`)
	if resp := r.recv(); resp.Error == nil || resp.Error.Code != -32601 {
		t.Errorf("unknown method: %+v", resp.Error)
	}
	r.send(`{"jsonrpc":"2.0","method":"no/such/notification"}`) // never answered
	r.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if resp := r.recv(); string(resp.ID) != "4" || resp.Error != nil {
		t.Errorf("ping after a notification: id %s, error %+v", resp.ID, resp.Error)
	}
}

// EDGE 65: a 100 KiB request works, a line over the limit is discarded with an error for
// its id and the stream stays in sync.
func TestTransportLongLines(t *testing.T) {
	t.Parallel()
	r := startRPC(t, &fakeService{}, Options{})
	r.initialize()
	big := strings.Repeat("x", 100<<10)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo ` + big + `"}}}`)
	if resp := r.recv(); resp.Error != nil || string(resp.ID) != "1" {
		t.Errorf("100 KiB call: %+v", resp.Error)
	}
	huge := `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"` + strings.Repeat("y", DefaultMaxLine+1<<20) + `"}}`
	r.send(huge)
	if resp := r.recv(); resp.Error == nil || resp.Error.Code != -32600 || string(resp.ID) != "2" {
		t.Errorf("huge line: id %s error %+v", resp.ID, resp.Error)
	}
	// The id is found only at the start of the line; later, it is not read.
	late := `{"jsonrpc":"2.0","method":"ping","params":{"x":"` + strings.Repeat("y", DefaultMaxLine) + `"},"id":4}`
	r.send(late)
	if resp := r.recv(); resp.Error == nil || resp.Error.Code != -32600 || string(resp.ID) != "null" {
		t.Errorf("huge line, id at its end: id %s error %+v", resp.ID, resp.Error)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if resp := r.recv(); resp.Error != nil || string(resp.ID) != "3" {
		t.Errorf("tools/list after huge line: %+v", resp.Error)
	}
}

// The end of the input ends Run with nil, also in the middle of a line.
func TestTransportEOF(t *testing.T) {
	t.Parallel()
	r := startRPC(t, &fakeService{}, Options{})
	r.initialize()
	go io.Copy(io.Discard, r.out) // the cut line is answered with a parse error
	io.WriteString(r.in, `{"jsonrpc":"2.0","id":9,"method":"pi`)
	r.in.Close()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return at the end of its input")
	}
}

// A response the SDK cannot encode (an error whose data is not JSON) becomes an internal
// error for its request's id, and the connection goes on; a notification that cannot be
// encoded is dropped.
func TestTransportUnencodable(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	var out testtool.Buffer
	tr := &LineTransport{In: inR, Out: &out}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":12345678901234567890123,"method":"x"}`+"\n")
	msg, err := conn.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := msg.(*jsonrpc.Request)
	bad := &jsonrpc.Error{Code: -32602, Message: "Resource not found", Data: json.RawMessage("{\"uri\":\"\\x00\"}")}
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Error: bad}); err != nil {
		t.Fatalf("an unencodable response is an error of the connection: %v", err)
	}
	note := &jsonrpc.Request{Method: "notifications/x", Params: json.RawMessage("{\"x\":\x01}")}
	if err := conn.Write(context.Background(), note); err != nil {
		t.Fatalf("an unencodable notification is an error of the connection: %v", err)
	}
	got := out.String()
	var resp response
	if err := json.Unmarshal([]byte(got), &resp); err != nil || strings.Count(got, "\n") != 1 {
		t.Fatalf("output %q: want one JSON line (%v)", got, err)
	}
	if string(resp.ID) != "12345678901234567890123" || resp.Error == nil || resp.Error.Code != jsonrpc.CodeInternalError {
		t.Errorf("answer %q: want an internal error for id 12345678901234567890123", got)
	}
}

// A request reusing the id of one still unanswered is refused with that id; once the
// first is answered, the id can be used again. The server sees ids of the transport's
// own, and the answer carries the client's id as written.
func TestTransportDuplicateID(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	var out testtool.Buffer
	conn, err := (&LineTransport{In: inR, Out: &out}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	line := `{"jsonrpc":"2.0","id":1.50,"method":"x"}` + "\n"
	go io.WriteString(inW, line+line)
	msg, err := conn.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The second line is refused by the transport itself; wait for its answer.
	for !strings.Contains(out.String(), "already used") {
		runtime.Gosched()
	}
	if got := out.String(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1.50,"error":{"code":-32600`) {
		t.Errorf("a duplicate id: %q", got)
	}
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasSuffix(got, `{"jsonrpc":"2.0","id":1.50,"result":{}}`+"\n") {
		t.Errorf("the answer: %q", got)
	}
	go io.WriteString(inW, line)
	if msg, err := conn.Read(context.Background()); err != nil || msg.(*jsonrpc.Request).Method != "x" {
		t.Errorf("the id again once answered: %v %v", msg, err)
	}
}

// goroutineID is the calling goroutine's number, from the first line of its stack.
func goroutineID() string {
	var buf [64]byte
	s := string(buf[:runtime.Stack(buf[:], false)])
	s = strings.TrimPrefix(s, "goroutine ")
	id, _, _ := strings.Cut(s, " ")
	return id
}

// A call the transport serves itself runs on the goroutine that read its line (no
// goroutine of its own to wait for), while a fresh reader goes on reading: a second call,
// read while the first still runs, answers, and so does the first once the second has
// begun.
func TestTransportCallRunsOnItsReader(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr := &LineTransport{In: inR, Out: outW}
	type ran struct{ reader, runner string }
	ids := make(chan ran, 2)
	second := make(chan struct{})
	tr.calls = func(params json.RawMessage) (func(context.Context) (json.RawMessage, error), bool) {
		reader := goroutineID() // decode asks on the goroutine that read the line
		first := strings.Contains(string(params), "first")
		return func(ctx context.Context) (json.RawMessage, error) {
			ids <- ran{reader, goroutineID()}
			if !first {
				close(second)
			} else {
				select {
				case <-second:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return json.RawMessage(`{}`), nil
		}, true
	}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"first"}}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"second"}}`+"\n")
	out := bufio.NewReader(outR)
	got := map[string]bool{}
	for range 2 {
		l, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		var resp response
		if err := json.Unmarshal([]byte(l), &resp); err != nil || resp.Error != nil {
			t.Fatalf("answer %q (%v)", l, err)
		}
		got[string(resp.ID)] = true
	}
	if !got["1"] || !got["2"] {
		t.Errorf("answers for ids %v, want 1 and 2", got)
	}
	for range 2 {
		if r := <-ids; r.reader != r.runner {
			t.Errorf("a call read by goroutine %s ran on goroutine %s", r.reader, r.runner)
		}
	}
}

// Calls one after another pass the input between two goroutines: the one that served a
// call waits to read on, and takes the input over when the reader reads the next call,
// instead of a fresh reading goroutine being started per call.
func TestTransportReadersReused(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	defer inW.Close()
	tr := &LineTransport{In: inR, Out: outW}
	runners := map[string]bool{}
	var mu sync.Mutex
	tr.calls = func(params json.RawMessage) (func(context.Context) (json.RawMessage, error), bool) {
		return func(ctx context.Context) (json.RawMessage, error) {
			mu.Lock()
			runners[goroutineID()] = true
			mu.Unlock()
			return json.RawMessage(`{}`), nil
		}, true
	}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out := bufio.NewReader(outR)
	const calls = 20
	for i := range calls {
		if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`+"\n", i+1); err != nil {
			t.Fatal(err)
		}
		if l, err := out.ReadString('\n'); err != nil || !strings.Contains(l, `"result"`) {
			t.Fatalf("answer %q (%v)", l, err)
		}
		// The goroutine that served the call waits to read on before the next call
		// comes (else the reader would rightly start another). It has nothing else to
		// do: yielding lets it get there.
		for n := 0; spares(tr.conn) != 1; n++ {
			if n == 10_000_000 {
				t.Fatalf("call %d: no goroutine waits to read on once the call was served", i+1)
			}
			runtime.Gosched()
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runners) > 2 {
		t.Errorf("%d calls one after another ran on %d goroutines, want at most 2", calls, len(runners))
	}
}

// spares is how many reading goroutines of c wait in park.
func spares(c *lineConn) int {
	c.spareMu.Lock()
	defer c.spareMu.Unlock()
	return len(c.waiting)
}
