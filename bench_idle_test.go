package ptyhub_test

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// vmRSS returns this process's resident set size in bytes (Linux).
func vmRSS(b *testing.B) int64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	for line := range bytes.SplitSeq(st, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(string(bytes.Fields(v)[0]), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkIdleSessions: what one idle session (`sleep 3600`, transcripts on) costs the
// manager's process, from the growth between 20 and 20+N sessions (N = -benchtime, e.g.
// -benchtime 1000x): RSS, heap in use, goroutine stacks in use (KiB a session) and
// goroutines a session. The reaper process is not counted here (ptyhub-bench counts it).
func BenchmarkIdleSessions(b *testing.B) {
	m, err := session.NewManager(session.Options{MaxSessions: 1 << 20, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("bench")
	ctx := context.Background()
	zero := int64(0)
	start := func() {
		if _, err := c.Exec(ctx, session.ExecRequest{Argv: []string{"sleep", "3600"}, YieldTimeMs: &zero}); err != nil {
			b.Fatal(err)
		}
	}
	measure := func() (rss int64, ms runtime.MemStats, g int) {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return vmRSS(b), ms, runtime.NumGoroutine()
	}
	for range 20 {
		start()
	}
	r0, m0, g0 := measure()
	n := 0
	for b.Loop() {
		start()
		n++
	}
	r1, m1, g1 := measure()
	kib := func(d int64) float64 { return float64(d) / 1024 / float64(n) }
	b.ReportMetric(kib(r1-r0), "rss-KiB/session")
	b.ReportMetric(kib(int64(m1.HeapInuse)-int64(m0.HeapInuse)), "heap-KiB/session")
	b.ReportMetric(kib(int64(m1.StackInuse)-int64(m0.StackInuse)), "stack-KiB/session")
	b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/session")
}

// BenchmarkExecWithIdle: exec of /bin/true on a manager with IDLE (default 1,000) idle
// sessions (`sleep 3600`) alive, against the same on a manager with none, interleaved
// sample by sample (each manager has its own reaper). Reports empty-ms, idle-ms (medians)
// and their ratio: what the sessions alive cost each start and exit.
func BenchmarkExecWithIdle(b *testing.B) {
	idle := 1000
	if v, err := strconv.Atoi(os.Getenv("IDLE")); err == nil {
		idle = v
	}
	newClient := func() *session.Client {
		m, err := session.NewManager(session.Options{MaxSessions: 1 << 20, StateDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { m.Close(context.Background()) })
		return m.NewClient("bench")
	}
	empty, busy := newClient(), newClient()
	ctx := context.Background()
	zero := int64(0)
	for range idle {
		if _, err := busy.Exec(ctx, session.ExecRequest{Argv: []string{"sleep", "3600"}, YieldTimeMs: &zero}); err != nil {
			b.Fatal(err)
		}
	}
	exec := func(c *session.Client) time.Duration {
		t0 := time.Now()
		r, err := c.Exec(ctx, session.ExecRequest{Argv: []string{"/bin/true"}})
		d := time.Since(t0)
		if err != nil || r.State != session.StateExited {
			b.Fatalf("%v %+v", err, r)
		}
		return d
	}
	var e, i []time.Duration
	for b.Loop() {
		e = append(e, exec(empty))
		i = append(i, exec(busy))
	}
	me, mi := median(e), median(i)
	b.ReportMetric(float64(me.Microseconds())/1000, "empty-ms")
	b.ReportMetric(float64(mi.Microseconds())/1000, "idle-ms")
	b.ReportMetric(float64(mi)/float64(me), "ratio")
}
