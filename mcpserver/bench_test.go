package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/ptyhub/ptyhub/session"
)

// replService is a service whose write_stdin answers at once, as a REPL's turn does.
func replService() *fakeService {
	return &fakeService{write: func(context.Context, session.WriteRequest) (*session.Result, error) {
		return &session.Result{SessionID: "1", State: session.StateRunning, ReturnedBecause: session.BecausePattern,
			Output: "2\n>>> ", ChunkID: "c1", NextOffset: 42}, nil
	}}
}

// BenchmarkWriteStdinCall: one write_stdin tool call through the MCP layer (Go client,
// in-memory transport, a service that answers at once): what the MCP layer itself costs
// a REPL turn, without the session or any process hop.
func BenchmarkWriteStdinCall(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := replService()
	st, ct := mcp.NewInMemoryTransports()
	srv := New(svc, Options{})
	go srv.Serve(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"session_id": "1", "chars": "1+1\n", "wait_for": ">>> $"}
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_stdin", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkWriteStdinServer: the server's side of one write_stdin call, as ptyhub mcp
// serves it: a request line in, through LineTransport, the SDK and the tool handler (a
// service that answers at once), to the response line out.
func BenchmarkWriteStdinServer(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := replService()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := New(svc, Options{})
	go srv.Serve(ctx, &LineTransport{In: inR, Out: outW})
	br := bufio.NewReader(outR)
	send := func(s string) { inW.Write([]byte(s + "\n")) }
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	br.ReadBytes('\n')
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	i := 0
	for b.Loop() {
		i++
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_stdin","arguments":{"session_id":"1","chars":"1+1\n","wait_for":">>> $"}}}`, i))
		line, err := br.ReadBytes('\n')
		if err != nil || len(line) < 10 {
			b.Fatal(err, string(line))
		}
	}
}

// BenchmarkWriteStdinGoClient: one write_stdin call from the Go SDK's client to the
// server over pipes through LineTransport (as `ptyhub mcp` is reached), a service that
// answers at once: both sides' cost of a call.
func BenchmarkWriteStdinGoClient(b *testing.B) {
	svc := replService()
	cs, _ := goClient(b, New(svc, Options{}))
	ctx := context.Background()
	args := map[string]any{"session_id": "1", "chars": "1+1\n", "wait_for": ">>> $"}
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_stdin", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkWriteStdinServerTriple is BenchmarkWriteStdinServer for a client of the
// sessionless protocol, whose every call carries the _meta triple (the Go SDK's client
// since v1.8.0): on the transport's own path (fast) and with every call sent through
// the SDK (sdk), to compare the two.
func BenchmarkWriteStdinServerTriple(b *testing.B) {
	for _, sdkOnly := range []bool{false, true} {
		name := "fast"
		if sdkOnly {
			name = "sdk"
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			svc := replService()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			defer inW.Close()
			srv := New(svc, Options{})
			srv.sdkOnly = sdkOnly
			go srv.Serve(ctx, &LineTransport{In: inR, Out: outW})
			br := bufio.NewReader(outR)
			send := func(s string) { inW.Write([]byte(s + "\n")) }
			send(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":` + goClientMeta + `}}`)
			br.ReadBytes('\n')
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				i++
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":`+goClientMeta+`,"name":"write_stdin","arguments":{"session_id":"1","chars":"1+1\n","wait_for":">>> $","yield_time_ms":30000}}}`, i))
				line, err := br.ReadBytes('\n')
				if err != nil || !bytes.Contains(line, []byte(`"structuredContent"`)) {
					b.Fatal(err, string(line))
				}
			}
		})
	}
}
