package ptyhub_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/route"
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

// BenchmarkMCPExecWithIdle: BenchmarkMCPExecTrue's exec_command of /bin/true and
// kill_session {remove: true}, served as ptyhub mcp serves them (through a route.Router
// over its manager's client, which is what its resources' watch of the sessions runs
// through), with IDLE (default 1,000) idle sessions (`sleep 3600`) alive in the same
// manager. Its B/op and allocs/op, against IDLE=0, are what the sessions alive add to
// each exec; gc/1000-execs and gc-cpu-ms/exec (the collector's mark work, from
// runtime/metrics) what the larger live heap adds; cpu-ms/exec is this process's CPU
// time (user and system) an exec, the reaper's aside.
func BenchmarkMCPExecWithIdle(b *testing.B) {
	idle := 1000
	if v, err := strconv.Atoi(os.Getenv("IDLE")); err == nil {
		idle = v
	}
	client := benchCallerClient(b, session.Options{MaxSessions: 1 << 20, StateDir: benchStateDir(b)})
	call := benchMCP(b, &route.Router{Local: client})
	idRE := regexp.MustCompile(`"session_id":"([^"]+)"`)
	n := 1
	exec := func(argv string, yield int, want string) string {
		r := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"exec_command","arguments":{"argv":%s,"yield_time_ms":%d}}}`, n, argv, yield))
		n++
		id := idRE.FindStringSubmatch(r)
		if id == nil || !strings.Contains(r, want) {
			b.Fatalf("exec: %s", r)
		}
		return id[1]
	}
	execTrue := func() {
		id := exec(`["/bin/true"]`, 30000, `"exit_code":0`)
		r := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"kill_session","arguments":{"session_id":%q,"remove":true}}}`, n, id))
		n++
		if !strings.Contains(r, "removed") {
			b.Fatalf("kill_session: %s", r)
		}
	}
	for range idle {
		exec(`["sleep","3600"]`, 0, `"state":"running"`)
	}
	for range 5 { // the reaper started, the pools warm
		execTrue()
	}
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	runtime.GC()
	metrics.Read(samples)
	gc0, cpu0 := samples[0].Value.Uint64(), samples[1].Value.Float64()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ReportAllocs()
	for b.Loop() {
		execTrue()
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	metrics.Read(samples)
	execs := float64(b.N)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/1000/execs, "cpu-ms/exec")
	b.ReportMetric(float64(samples[0].Value.Uint64()-gc0)*1000/execs, "gc/1000-execs")
	b.ReportMetric((samples[1].Value.Float64()-cpu0)*1000/execs, "gc-cpu-ms/exec")
}
