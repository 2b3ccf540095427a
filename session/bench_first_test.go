package session

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkExecRunningFirstResult: exec_command of cat returning at once (yield 0), the
// session still running, with transcripts on: the first result of a running session,
// which waits for the recorder's attempt to create the transcript; then kill_session
// {remove}. exec-µs is the median time of the exec_command call alone.
func BenchmarkExecRunningFirstResult(b *testing.B) {
	m, err := NewManager(Options{StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("bench")
	ctx := context.Background()
	zero := int64(0)
	b.ReportAllocs()
	var took []time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := c.Exec(ctx, ExecRequest{Argv: []string{"cat"}, YieldTimeMs: &zero})
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
}
