package ptyhub_test

import (
	"context"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// Benchmarks of the waiting-for-input return, each against a floor measured in
// the same run, sample by sample (helpers in bench_test.go).

// BenchmarkWaitREPLTurn: write_stdin "1+1\n" to python3 -q with no wait_for, returning
// because python waits for input again, against the same turn on a bare pty (write, read
// until "2\r\n>>> ").
func BenchmarkWaitREPLTurn(b *testing.B) {
	if _, err := osexec.LookPath("python3"); err != nil {
		b.Skip("python3 not installed")
	}
	m, read, stop := wBarePython(b)
	defer stop()
	read(">>> ")
	c := benchClient(b)
	ctx := context.Background()
	r, err := c.Exec(ctx, session.ExecRequest{Argv: []string{pythonExe(), "-q"}})
	if err != nil || r.ReturnedBecause != session.BecauseWaitingForInput {
		b.Fatalf("python3 did not prompt: %v %+v", err, r)
	}
	id := r.SessionID
	yield := int64(10_000)
	var floor, prod []time.Duration
	for b.Loop() {
		t0 := time.Now()
		m.Write([]byte("1+1\n"))
		read("2\r\n>>> ")
		floor = append(floor, time.Since(t0))
		t0 = time.Now()
		r, err := c.Write(ctx, session.WriteRequest{SessionID: id, Chars: "1+1\n", YieldTimeMs: &yield})
		prod = append(prod, time.Since(t0))
		if err != nil || r.ReturnedBecause != session.BecauseWaitingForInput || !strings.Contains(r.Output, "2\n>>> ") {
			b.Fatalf("turn %d: %v %s %q", len(prod), err, r.ReturnedBecause, r.Output)
		}
	}
	report(b, floor, prod)
}

// BenchmarkWaitExecPython: exec_command of python3 -q returning at its first prompt,
// against the time until that prompt is read on a bare pty.
func BenchmarkWaitExecPython(b *testing.B) {
	if _, err := osexec.LookPath("python3"); err != nil {
		b.Skip("python3 not installed")
	}
	c := benchClient(b)
	ctx := context.Background()
	var floor, prod []time.Duration
	for b.Loop() {
		t0 := time.Now()
		_, read, stop := wBarePython(b)
		read(">>> ")
		floor = append(floor, time.Since(t0))
		stop()
		t0 = time.Now()
		r, err := c.Exec(ctx, session.ExecRequest{Argv: []string{pythonExe(), "-q"}})
		prod = append(prod, time.Since(t0))
		if err != nil || r.ReturnedBecause != session.BecauseWaitingForInput || !strings.HasSuffix(r.Output, ">>> ") {
			b.Fatalf("exec: %v %+v", err, r)
		}
		c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	}
	report(b, floor, prod)
}
