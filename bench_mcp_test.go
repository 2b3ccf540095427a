package ptyhub_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	osexec "os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/mcpserver"
	"github.com/ptyhub/ptyhub/session"
)

// BenchmarkMCPREPLTurn: one write_stdin call ("1+1\n" to python3 -q, wait_for the next
// prompt, a long yield so that a loaded machine does not end a turn early) as ptyhub mcp
// serves it, end to end in this process: the request line in
// through the stdio transport, the MCP SDK, the tool handler, the session (writer,
// reader, collector), the response line out. Its B/op and allocs/op are what ptyhub
// allocates for one tool call (the client's own decoding is not counted: the lines are
// written and read as bytes).
func BenchmarkMCPREPLTurn(b *testing.B) { benchMCPTurn(b, true) }

// BenchmarkMCPREPLTurnDetector is BenchmarkMCPREPLTurn's turn without wait_for: the
// call returns when the waiting-for-input detector sees python3 blocked at its next
// prompt. Run it with -trace to count the goroutine hand-offs and syscalls of a turn.
func BenchmarkMCPREPLTurnDetector(b *testing.B) { benchMCPTurn(b, false) }

// benchMCPTurn runs the REPL turns of the two benchmarks above: with waitFor each call
// passes wait_for and must return on the pattern, else on the detector, with the turn's
// whole output.
func benchMCPTurn(b *testing.B, waitFor bool) {
	if _, err := osexec.LookPath("python3"); err != nil {
		b.Skip("python3 not installed")
	}
	call := benchMCP(b, benchClient(b))
	resp := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec_command","arguments":{"argv":[%q,"-q"],"wait_for":">>> $","yield_time_ms":30000}}}`, pythonExe()))
	m := regexp.MustCompile(`"session_id":"([^"]+)"`).FindStringSubmatch(resp)
	if m == nil || !strings.Contains(resp, `"returned_because":"pattern"`) {
		b.Fatalf("python3 did not prompt: %s", resp)
	}
	id := m[1]
	wf, because := `,"wait_for":">>> $"`, `"returned_because":"pattern"`
	if !waitFor {
		wf, because = "", `"returned_because":"waiting_for_input"`
	}
	req := func(n int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_stdin","arguments":{"session_id":%q,"chars":"1+1\n"%s,"yield_time_ms":30000}}}`, n, id, wf)
	}
	reqs := make([]string, 1024)
	next := len(reqs) // the index of the next request line made ahead
	n := 2
	b.ReportAllocs()
	for b.Loop() {
		if next == len(reqs) {
			b.StopTimer()
			for i := range reqs {
				reqs[i] = req(n)
				n++
			}
			next = 0
			b.StartTimer()
		}
		r := call(reqs[next])
		next++
		if !strings.Contains(r, because) || !waitFor && !strings.Contains(r, `"output":"1+1\n2\n\u003e\u003e\u003e "`) {
			b.Fatalf("turn: %s", r)
		}
	}
}

// benchMCP serves client's tools in this process over pipes, as `ptyhub mcp` serves them
// over stdio, after the initialize handshake, and returns call: it writes one request
// line and returns the next response line (notifications are skipped). The server stops
// when the benchmark ends.
func benchMCP(b *testing.B, svc session.Service) (call func(req string) string) {
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- mcpserver.Run(ctx, svc, inR, outW, mcpserver.Options{}) }()
	b.Cleanup(func() { cancel(); inW.Close(); <-done })
	br := bufio.NewReader(outR)
	var line []byte
	call = func(req string) string {
		if _, err := io.WriteString(inW, req+"\n"); err != nil {
			b.Fatal(err)
		}
		for {
			line = line[:0]
			for {
				frag, err := br.ReadSlice('\n')
				line = append(line, frag...)
				if err == nil {
					break
				}
				if err != bufio.ErrBufferFull {
					b.Fatal(err)
				}
			}
			if bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":`)) {
				return string(line)
			}
		}
	}
	call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return call
}
