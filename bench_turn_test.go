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
)

// BenchmarkMCPREPLTurnDetector is BenchmarkMCPREPLTurn's turn without wait_for: the
// call returns when the waiting-for-input detector sees python3 blocked at its next
// prompt. Run it with -trace to count the goroutine hand-offs and syscalls of a turn.
func BenchmarkMCPREPLTurnDetector(b *testing.B) {
	if _, err := osexec.LookPath("python3"); err != nil {
		b.Skip("python3 not installed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- mcpserver.Run(ctx, benchClient(b), inR, outW, mcpserver.Options{}) }()
	defer func() { cancel(); inW.Close(); <-done }()
	br := bufio.NewReader(outR)
	call := func(req string) string {
		if _, err := io.WriteString(inW, req+"\n"); err != nil {
			b.Fatal(err)
		}
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				b.Fatal(err)
			}
			if bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":`)) {
				return string(line) // a response; notifications are skipped
			}
		}
	}
	call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	resp := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec_command","arguments":{"argv":[%q,"-q"],"wait_for":">>> $","yield_time_ms":30000}}}`, pythonExe()))
	m := regexp.MustCompile(`"session_id":"([^"]+)"`).FindStringSubmatch(resp)
	if m == nil || !strings.Contains(resp, `"returned_because":"pattern"`) {
		b.Fatalf("python3 did not prompt: %s", resp)
	}
	n := 2
	for b.Loop() {
		r := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_stdin","arguments":{"session_id":%q,"chars":"1+1\n","yield_time_ms":30000}}}`, n, m[1]))
		n++
		if !strings.Contains(r, `"returned_because":"waiting_for_input"`) || !strings.Contains(r, `"output":"1+1\n2\n\u003e\u003e\u003e "`) {
			b.Fatalf("turn: %s", r)
		}
	}
}
