package ptyhub_test

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"

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
