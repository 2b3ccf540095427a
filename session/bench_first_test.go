package session

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkExecRunningFirstResult: exec_command of a program that stays running, with
// transcripts on, then kill_session {remove}: the first result of a running session,
// which waits for the recorder's attempt to create the transcript when it carries
// output. silent: cat, returning at once (yield 0) before any output; output: a line
// printed, returning at it (wait_for). exec-µs is the median time of the exec_command
// call alone.
func BenchmarkExecRunningFirstResult(b *testing.B) {
	y := int64(60000)
	zero := int64(0)
	for _, bc := range []struct {
		name string
		req  ExecRequest
	}{
		{"silent", ExecRequest{Argv: []string{"cat"}, YieldTimeMs: &zero}},
		{"output", ExecRequest{Cmd: "echo up; exec cat", WaitFor: "^up", YieldTimeMs: &y}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := NewManager(Options{StateDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(context.Background())
			c := m.NewClient("bench")
			ctx := context.Background()
			b.ReportAllocs()
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				r, err := c.Exec(ctx, bc.req)
				took = append(took, time.Since(t0))
				if err != nil || r.State != StateRunning {
					b.Fatalf("%v %+v", err, r)
				}
				if _, err := c.Kill(ctx, KillRequest{SessionID: r.SessionID, Remove: true}); err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "exec-µs")
		})
	}
}
