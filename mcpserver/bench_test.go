package mcpserver

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/ptyhub/ptyhub/session"
)

// BenchmarkWriteStdinCall: one write_stdin tool call through the MCP layer (Go client,
// in-memory transport, a service that answers at once): what the MCP layer itself costs
// a REPL turn, without the session or any process hop.
func BenchmarkWriteStdinCall(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := &fakeService{write: func(context.Context, session.WriteRequest) (*session.Result, error) {
		return &session.Result{SessionID: "1", State: session.StateRunning, ReturnedBecause: session.BecausePattern,
			Output: "2\n>>> ", ChunkID: "c1", NextOffset: 42}, nil
	}}
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
