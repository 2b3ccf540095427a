package ptyhub_test

import (
	"bytes"
	"context"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/pty"
	"github.com/ptyhub/ptyhub/session"
)

// Benchmarks of the product's figures measured in-process, each against a floor measured in the same
// run (interleaved sample by sample, so machine noise hits both alike). Reported metrics:
// floor-ms and ptyhub-ms (medians), over-ms (their difference) and ratio.

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func report(b *testing.B, floor, prod []time.Duration) {
	f, p := median(floor), median(prod)
	b.ReportMetric(float64(f.Microseconds())/1000, "floor-ms")
	b.ReportMetric(float64(p.Microseconds())/1000, "ptyhub-ms")
	b.ReportMetric(float64((p-f).Microseconds())/1000, "over-ms")
	b.ReportMetric(float64(p)/float64(f), "ratio")
}

func benchClient(b *testing.B) *session.Client {
	m, err := session.NewManager(session.Options{MaxSessions: 1 << 20, NoRecord: os.Getenv("NOREC") != ""})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close(context.Background()) })
	return m.NewClient("bench")
}

// bareSpawn is the floor: start argv on a fresh pty, read until EIO, wait.
func bareSpawn(b *testing.B, argv ...string) {
	m, slave, err := pty.Open(24, 80)
	if err != nil {
		b.Fatal(err)
	}
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	slave.Close()
	io.Copy(io.Discard, m)
	cmd.Wait()
	m.Close()
}

// BenchmarkExecTrue: exec_command of /bin/true against spawning it on a bare pty.
// NOREC=1 turns transcripts off, to see what recording costs.
func BenchmarkExecTrue(b *testing.B) {
	c := benchClient(b)
	var floor, prod []time.Duration
	ctx := context.Background()
	for b.Loop() {
		t0 := time.Now()
		bareSpawn(b, "/bin/true")
		floor = append(floor, time.Since(t0))
		t0 = time.Now()
		r, err := c.Exec(ctx, session.ExecRequest{Argv: []string{"/bin/true"}})
		prod = append(prod, time.Since(t0))
		if err != nil || r.State != session.StateExited {
			b.Fatalf("%v %+v", err, r)
		}
		c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	}
	report(b, floor, prod)
}

// pythonExe is the interpreter python3 resolves to (not a wrapper such as pyenv's shim,
// a bash script whose start-up of ~80 ms varies by several ms here), for floors and
// ptyhub alike.
var pythonExe = sync.OnceValue(func() string {
	out, err := osexec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if p := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(p) {
		return p
	}
	return "python3"
})

// wBarePython starts python3 -q on a bare pty; read returns once want was read.
func wBarePython(b *testing.B) (m *pty.Master, read func(want string), stop func()) {
	m, slave, err := pty.Open(24, 80)
	if err != nil {
		b.Fatal(err)
	}
	py := osexec.Command(pythonExe(), "-q")
	py.Env = append(os.Environ(), "TERM=xterm-256color", "NO_COLOR=1")
	py.Stdin, py.Stdout, py.Stderr = slave, slave, slave
	py.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := py.Start(); err != nil {
		b.Fatal(err)
	}
	slave.Close()
	buf := make([]byte, 4096)
	read = func(want string) {
		var acc []byte
		for !bytes.Contains(acc, []byte(want)) {
			n, err := m.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			acc = append(acc, buf[:n]...)
		}
	}
	stop = func() { m.Close(); py.Process.Kill(); py.Wait() }
	return m, read, stop
}

// BenchmarkREPLTurn: write_stdin "1+1\n" to python3 -q, returning at the next prompt
// (wait_for), against the same turn on a bare pty.
func BenchmarkREPLTurn(b *testing.B) {
	if _, err := osexec.LookPath("python3"); err != nil {
		b.Skip("python3 not installed")
	}
	// Floor: a bare pty with python3 -q; write, read until "2\r\n>>> ".
	m, readUntil, stop := wBarePython(b)
	defer stop()
	readUntil(">>> ")

	c := benchClient(b)
	ctx := context.Background()
	r, err := c.Exec(ctx, session.ExecRequest{Argv: []string{pythonExe(), "-q"}, WaitFor: ">>> $"})
	if err != nil || r.ReturnedBecause != session.BecausePattern {
		b.Fatalf("python3 did not prompt: %v %+v", err, r)
	}
	id := r.SessionID
	var floor, prod []time.Duration
	for b.Loop() {
		t0 := time.Now()
		m.Write([]byte("1+1\n"))
		readUntil("2\r\n>>> ")
		floor = append(floor, time.Since(t0))
		t0 = time.Now()
		r, err := c.Write(ctx, session.WriteRequest{SessionID: id, Chars: "1+1\n", WaitFor: ">>> $", YieldTimeMs: new(int64(10000))})
		prod = append(prod, time.Since(t0))
		if err != nil || r.ReturnedBecause != session.BecausePattern || !bytes.Contains([]byte(r.Output), []byte("2\n>>> ")) {
			b.Fatalf("turn %d: %v %s %q", len(prod), err, r.ReturnedBecause, r.Output)
		}
	}
	report(b, floor, prod)
}

// BenchmarkCollect1GiB: exec_command of a 1 GiB flood collected into a 10,000-token
// result, against reading the same flood from a bare pty. Reports MB/s of both, the
// heap growth of the call, and the CPU this process spent per GiB in each (the bare
// loop's reads against the session's reader, recorder and collector; the writer's CPU is
// the child's and alike in both). On a machine whose CPUs the flood keeps busy, the
// extra CPU is what makes the session slower. PTYHUB_BENCH_BYTES overrides the size;
// NOREC=1 turns transcripts off, to see what recording costs.
func BenchmarkCollect1GiB(b *testing.B) {
	size := int64(1 << 30)
	if s := os.Getenv("PTYHUB_BENCH_BYTES"); s != "" {
		size, _ = strconv.ParseInt(s, 10, 64)
	}
	// The writer's CPU (sh, head and tr: the session's program is not this process's
	// child) is what sh's times builtin says of its children, written to a file.
	timesFile := filepath.Join(b.TempDir(), "times")
	script := "head -c " + strconv.FormatInt(size, 10) + " /dev/zero | tr '\\0' a; times >" + timesFile
	c := benchClient(b)
	ctx := context.Background()
	var floor, prod, floorCPU, prodCPU []time.Duration
	var prodWritten []int64
	var floorUse, prodUse []procUse
	var peak atomic.Uint64
	for b.Loop() {
		t0, c0, u0 := time.Now(), selfCPU(), readProcUse()
		bareSpawn(b, "sh", "-c", script)
		floor = append(floor, time.Since(t0))
		floorCPU = append(floorCPU, selfCPU()-c0)
		floorUse = append(floorUse, readProcUse().minus(u0).withWriter(b, timesFile))

		runtime.GC()
		var ms0 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // samples the heap while the call runs
			defer close(done)
			var st runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				runtime.ReadMemStats(&st)
				if d := st.HeapInuse - min(st.HeapInuse, ms0.HeapInuse); d > peak.Load() {
					peak.Store(d)
				}
			}
		}()
		t0, c0, w0, u0 := time.Now(), selfCPU(), selfWritten(), readProcUse()
		r, err := c.Exec(ctx, session.ExecRequest{Cmd: script, YieldTimeMs: new(int64(600000))})
		prod = append(prod, time.Since(t0))
		prodCPU = append(prodCPU, selfCPU()-c0)
		prodWritten = append(prodWritten, selfWritten()-w0)
		prodUse = append(prodUse, readProcUse().minus(u0).withWriter(b, timesFile))
		close(stop)
		<-done
		if err != nil || r.State != session.StateExited || r.TruncatedRange == nil {
			b.Fatalf("%v %+v", err, r)
		}
		c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	}
	report(b, floor, prod)
	mb := float64(size) / 1e6
	b.ReportMetric(mb/median(floor).Seconds(), "floor-MB/s")
	b.ReportMetric(mb/median(prod).Seconds(), "ptyhub-MB/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "heap-growth-MiB")
	gib := float64(size) / (1 << 30)
	b.ReportMetric(median(floorCPU).Seconds()/gib, "floor-cpu-s/GiB")
	b.ReportMetric(median(prodCPU).Seconds()/gib, "ptyhub-cpu-s/GiB")
	slices.Sort(prodWritten)
	b.ReportMetric(float64(prodWritten[len(prodWritten)/2])/(1<<20)/gib, "ptyhub-written-MiB/GiB")
	for _, u := range []struct {
		name string
		all  []procUse
	}{{"floor", floorUse}, {"ptyhub", prodUse}} {
		m := medianUse(u.all)
		b.ReportMetric(m.childCPU.Seconds()/gib, u.name+"-writer-cpu-s/GiB")
		b.ReportMetric(float64(m.reads)/gib, u.name+"-reads/GiB")
		b.ReportMetric(float64(m.switches)/gib, u.name+"-switches/GiB")
	}
}

// procUse is what a flood used: the writer's CPU (sh's children, head and tr; see
// withWriter), this process's read system calls (syscr of /proc/self/io, every thread:
// the pty reads and the few others) and its context switches, voluntary and
// involuntary, every thread.
type procUse struct {
	childCPU time.Duration
	reads    int64
	switches int64
}

func readProcUse() procUse {
	var u procUse
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.switches = ru.Nvcsw + ru.Nivcsw
	}
	if b, err := os.ReadFile("/proc/self/io"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "syscr: "); ok {
				u.reads, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return u
}

func (u procUse) minus(v procUse) procUse {
	return procUse{u.childCPU - v.childCPU, u.reads - v.reads, u.switches - v.switches}
}

// withWriter sets childCPU from the times file the flood's script wrote (sh's times
// builtin: its own user and system time, then its children's), and removes the file.
func (u procUse) withWriter(b *testing.B, path string) procUse {
	data, err := os.ReadFile(path)
	os.Remove(path)
	lines := strings.Fields(string(data))
	if err != nil || len(lines) != 4 {
		b.Fatalf("the flood's times: %q %v", data, err)
	}
	u.childCPU = 0
	for _, f := range lines[2:] {
		m, s, _ := strings.Cut(strings.TrimSuffix(f, "s"), "m")
		mins, _ := strconv.ParseFloat(m, 64)
		secs, _ := strconv.ParseFloat(s, 64)
		u.childCPU += time.Duration((mins*60 + secs) * float64(time.Second))
	}
	return u
}

// medianUse is the median of each field on its own.
func medianUse(all []procUse) procUse {
	var m procUse
	var cpu []time.Duration
	var reads, sw []int64
	for _, u := range all {
		cpu, reads, sw = append(cpu, u.childCPU), append(reads, u.reads), append(sw, u.switches)
	}
	slices.Sort(cpu)
	slices.Sort(reads)
	slices.Sort(sw)
	m.childCPU, m.reads, m.switches = cpu[len(cpu)/2], reads[len(reads)/2], sw[len(sw)/2]
	return m
}

// selfWritten is how many bytes this process has handed to write(2) and its kind so far
// (wchar of /proc/self/io: files and pipes, page cache included); 0 where there is no
// such file.
func selfWritten() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// selfCPU is the user and system CPU this process has used so far (its children's not
// included).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
