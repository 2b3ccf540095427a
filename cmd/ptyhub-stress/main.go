//go:build linux

// Command ptyhub-stress is the bounded adversarial campaign: it drives an in-process
// session manager (the engine of `ptyhub serve` and `ptyhub mcp`, with its own reaper)
// through load and faults on this machine only, and prints one line of figures per
// scenario. Every scenario is bounded in count and in time (-timeout); nothing leaves the
// loopback, and every process it starts ends before it exits.
//
//	go run ./cmd/ptyhub-stress                       # every scenario, the default sizes
//	go run ./cmd/ptyhub-stress -only flood -flood 5000000000
//
// Scenarios: sessions (-sessions started at once, all alive, all ended by Close, no
// orphan), agents (-agents clients × -execs exec_command calls each, every output
// checked), flood (-flood bytes through one session: the result and the transcript
// account for every byte), reaper (kill -9 of the reaper under a session with HUP-proof,
// nohup and setsid processes: none survives, the next exec runs), fds (RLIMIT_NOFILE
// lowered until a start fails: the error names the limit, and starts work again once
// sessions end). It exits 1 if any scenario found a fault.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/reaper"
	"github.com/ptyhub/ptyhub/session"
	"github.com/ptyhub/ptyhub/transcript"
)

func main() {
	only := flag.String("only", "", "run only these scenarios (comma-separated: sessions,agents,flood,reaper,fds)")
	nSessions := flag.Int("sessions", 1000, "sessions alive at once in the sessions scenario")
	nAgents := flag.Int("agents", 8, "concurrent clients in the agents scenario")
	nExecs := flag.Int("execs", 100, "exec_command calls per client in the agents scenario")
	flood := flag.Int64("flood", 5_000_000_000, "bytes printed in the flood scenario")
	timeout := flag.Duration("timeout", 20*time.Minute, "bound on each scenario")
	flag.Parse()
	state, err := os.MkdirTemp("", "ptyhub-stress-state")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ptyhub-stress:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(state)
	scenarios := []struct {
		name string
		run  func(ctx context.Context, dir string) (string, error)
	}{
		{"sessions", func(ctx context.Context, dir string) (string, error) { return manySessions(ctx, dir, *nSessions) }},
		{"agents", func(ctx context.Context, dir string) (string, error) { return agents(ctx, dir, *nAgents, *nExecs) }},
		{"flood", func(ctx context.Context, dir string) (string, error) { return floodOne(ctx, dir, *flood) }},
		{"reaper", reaperKilled},
		{"fds", outOfFDs},
	}
	failed := false
	for i, sc := range scenarios {
		if *only != "" && !strings.Contains(","+*only+",", ","+sc.name+",") {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		t0 := time.Now()
		dir := fmt.Sprintf("%s/%d", state, i)
		figures, err := sc.run(ctx, dir)
		cancel()
		status := "ok"
		if err != nil {
			status, failed = "FAULT: "+err.Error(), true
		}
		fmt.Printf("%-8s %6.1fs  %s  %s\n", sc.name, time.Since(t0).Seconds(), figures, status)
	}
	if failed {
		os.Exit(1)
	}
}

// manager returns a manager recording into dir, allowing max sessions per client.
func manager(dir string, max int) (*session.Manager, error) {
	return session.NewManager(session.Options{StateDir: dir, MaxSessions: max})
}

// closeAndCount closes m and returns how many of uuids still have a live process.
func closeAndCount(m *session.Manager, uuids []string) int {
	m.Close(context.Background())
	return len(liveOf(uuids))
}

// liveOf lists the live processes that carry PTYHUB_SESSION of one of uuids.
func liveOf(uuids []string) []int {
	want := map[string]bool{}
	for _, u := range uuids {
		want[u] = true
	}
	var out []int
	for _, p := range proc.List() {
		if p.Dead() {
			continue
		}
		if v, ok := proc.Getenv(p.PID, reaper.EnvSession); ok && want[v] {
			out = append(out, p.PID)
		}
	}
	return out
}

func ms(v int64) *int64 { return &v }

// manySessions starts n idle sessions at once (8 starting concurrently), checks they all
// run, and that Close leaves no process of theirs.
func manySessions(ctx context.Context, dir string, n int) (string, error) {
	m, err := manager(dir, n+16)
	if err != nil {
		return "", err
	}
	c := m.NewClient("stress")
	var mu sync.Mutex
	var uuids []string
	var failures []string
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range 8 {
		wg.Go(func() {
			for int(next.Add(1)) <= n && ctx.Err() == nil {
				r, err := c.Exec(ctx, session.ExecRequest{Argv: []string{"cat"}, YieldTimeMs: ms(0)})
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				} else {
					uuids = append(uuids, r.UUID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	startS := time.Since(t0).Seconds()
	running := m.Running()
	rss := proc.SelfRSS()
	left := closeAndCount(m, uuids)
	fig := fmt.Sprintf("started %d/%d in %.1fs, %d running, manager RSS %d MiB, %d processes left after close", len(uuids), n, startS, running, rss>>20, left)
	switch {
	case len(failures) > 0:
		return fig, fmt.Errorf("%d starts failed, first: %s", len(failures), failures[0])
	case running != n:
		return fig, fmt.Errorf("%d sessions running, want %d", running, n)
	case left > 0:
		return fig, fmt.Errorf("%d processes outlived Close", left)
	}
	return fig, nil
}

// agents runs k clients (each its own pool, as agents are), each making execs
// exec_command calls one after another, all clients at once; every output is checked.
func agents(ctx context.Context, dir string, k, execs int) (string, error) {
	m, err := manager(dir, 64)
	if err != nil {
		return "", err
	}
	var bad atomic.Int64
	var first atomic.Value
	var lat []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for a := range k {
		c := m.NewClient("agent-" + strconv.Itoa(a))
		wg.Go(func() {
			for i := range execs {
				if ctx.Err() != nil {
					bad.Add(1)
					return
				}
				want := fmt.Sprintf("agent %d exec %d", a, i)
				t0 := time.Now()
				r, err := c.Exec(ctx, session.ExecRequest{Cmd: "echo '" + want + "'", YieldTimeMs: ms(60000)})
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				if err != nil || r.ExitCode == nil || *r.ExitCode != 0 || strings.TrimSpace(r.Output) != want {
					bad.Add(1)
					first.CompareAndSwap(nil, fmt.Sprintf("%s: %v %+v", want, err, r))
				}
			}
		})
	}
	wg.Wait()
	m.Close(context.Background())
	p50, p99 := pct(lat, 50), pct(lat, 99)
	fig := fmt.Sprintf("%d×%d exec_command, %d wrong, p50 %.1f ms, p99 %.1f ms", k, execs, bad.Load(), ms64(p50), ms64(p99))
	if bad.Load() > 0 {
		return fig, fmt.Errorf("first wrong: %v", first.Load())
	}
	return fig, nil
}

func ms64(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	for i := 1; i < len(s); i++ { // insertion sort: a few hundred samples
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[min(len(s)-1, len(s)*p/100)]
}

// floodOne prints size bytes ('a' × 4095 and a newline, repeated) through one session,
// with the terminal passing them as they are, and checks that the result accounts for
// every byte (no byte missed, the digest of them all) and that the transcript holds
// every byte up to its cap, then a marker.
func floodOne(ctx context.Context, dir string, size int64) (string, error) {
	m, err := manager(dir, 4)
	if err != nil {
		return "", err
	}
	defer m.Close(context.Background())
	c := m.NewClient("flood")
	line := append(bytes.Repeat([]byte{'a'}, 4095), '\n')
	sum := sha256.New()
	for left := size; left > 0; left -= int64(len(line)) {
		sum.Write(line[:min(int64(len(line)), left)])
	}
	want := hex.EncodeToString(sum.Sum(nil))
	script := fmt.Sprintf("stty -opost && yes %s | head -c %d", strings.Repeat("a", 4095), size)
	t0 := time.Now()
	r, err := c.Exec(ctx, session.ExecRequest{Cmd: script, YieldTimeMs: ms(600000), MaxOutputTokens: ms(10000)})
	for err == nil && r.State != session.StateExited && ctx.Err() == nil {
		r, err = c.Write(ctx, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: ms(600000), MaxOutputTokens: ms(10000)})
	}
	if err != nil {
		return "", err
	}
	secs := time.Since(t0).Seconds()
	fig := fmt.Sprintf("%d bytes in %.1fs (%.0f MB/s)", size, secs, float64(size)/secs/1e6)
	if r.Completion == nil || r.Completion.OutputBytes != size || r.Completion.OutputSHA256 != want {
		return fig, fmt.Errorf("result's completion %+v does not account for the %d bytes printed", r.Completion, size)
	}
	path, err := m.TranscriptPath(r.SessionID)
	if err != nil {
		return fig, err
	}
	rc, err := transcript.Output(ctx, path, transcript.OutputOptions{Follow: true})
	if err != nil {
		return fig, err
	}
	defer rc.Close()
	var recorded int64
	buf := make([]byte, 1<<20)
	mismatch := int64(-1)
	for {
		n, err := rc.Read(buf)
		for i := range n {
			if mismatch < 0 && buf[i] != line[(recorded+int64(i))%int64(len(line))] {
				mismatch = recorded + int64(i)
			}
		}
		recorded += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fig, err
		}
	}
	fig += fmt.Sprintf(", missed %d, transcript holds %d bytes (cap %d), result sha256 of all %d", r.MissedBytes, recorded, transcript.DefaultCap, r.Completion.OutputBytes)
	if r.MissedBytes != 0 {
		// Past the cap, bytes the agent's cursor let leave the ring are kept nowhere.
		fig += " (past the transcript's cap)"
	}
	if mismatch >= 0 {
		return fig, fmt.Errorf("transcript differs from the output at byte %d", mismatch)
	}
	if recorded < min(size, transcript.DefaultCap*9/10) {
		return fig, fmt.Errorf("transcript holds %d bytes of %d", recorded, size)
	}
	return fig, nil
}

// reaperKilled kills the manager's reaper (SIGKILL, by pid) under a session with a
// HUP-ignoring leader, a nohup job and a setsid escaper, and checks none survives and the
// next exec runs.
func reaperKilled(ctx context.Context, dir string) (string, error) {
	m, err := manager(dir, 8)
	if err != nil {
		return "", err
	}
	defer m.Close(context.Background())
	c := m.NewClient("reaper")
	r, err := c.Exec(ctx, session.ExecRequest{
		Cmd:     `trap '' HUP; nohup sleep 1000 >/dev/null 2>&1 & setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo "leader $$"; while :; do sleep 1000; done`,
		WaitFor: `leader \d+`, YieldTimeMs: ms(30000)})
	if err != nil {
		return "", err
	}
	i := strings.Index(r.Output, "leader ")
	if i < 0 {
		return "", fmt.Errorf("session did not start: %q", r.Output)
	}
	leader, _ := strconv.Atoi(strings.Fields(r.Output[i:])[1])
	st, err := proc.Stat(leader)
	if err != nil {
		return "", err
	}
	before := len(liveOf([]string{r.UUID}))
	if err := syscall.Kill(st.PPID, syscall.SIGKILL); err != nil {
		return "", err
	}
	r2, err := c.Write(ctx, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: ms(30000)})
	if err != nil {
		return "", err
	}
	left := liveOf([]string{r.UUID})
	r3, err := c.Exec(ctx, session.ExecRequest{Cmd: "echo next", YieldTimeMs: ms(30000)})
	fig := fmt.Sprintf("%d processes under the killed reaper, %d left, session %s, next exec %v", before, len(left), r2.State, exitText(r3, err))
	switch {
	case len(left) > 0:
		return fig, fmt.Errorf("processes %v outlived their reaper", left)
	case r2.State != session.StateExited:
		return fig, errors.New("the session still runs")
	case err != nil || r3.ExitCode == nil || *r3.ExitCode != 0:
		return fig, errors.New("the next exec did not run")
	}
	return fig, nil
}

func exitText(r *session.Result, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	if r.ExitCode != nil {
		return "exit " + strconv.Itoa(*r.ExitCode)
	}
	return r.State
}

// outOfFDs lowers this process's RLIMIT_NOFILE to a little above what it uses, starts
// sessions until one fails, and checks the failure is an error naming the limit (not a
// session with an exit code) and that a start works again once the sessions ended.
func outOfFDs(ctx context.Context, dir string) (string, error) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		return "", err
	}
	m, err := manager(dir, 1000)
	if err != nil {
		return "", err
	}
	defer m.Close(context.Background())
	c := m.NewClient("fds")
	// One session first: the reaper and the registry hold their descriptors.
	if _, err := c.Exec(ctx, session.ExecRequest{Cmd: "true", YieldTimeMs: ms(30000)}); err != nil {
		return "", err
	}
	lim := syscall.Rlimit{Cur: uint64(len(proc.OpenFDs()) + 64), Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "", err
	}
	started := 0
	var ferr error
	var ids []string
	for started < 500 && ctx.Err() == nil {
		r, err := c.Exec(ctx, session.ExecRequest{Argv: []string{"cat"}, YieldTimeMs: ms(0)})
		if err != nil {
			ferr = err
			break
		}
		if r.State == session.StateExited {
			ferr = fmt.Errorf("a start that could not run became a session that exited (%s): %q", exitText(r, nil), r.Output)
			break
		}
		ids = append(ids, r.SessionID)
		started++
	}
	for _, id := range ids {
		c.Kill(ctx, session.KillRequest{SessionID: id})
	}
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	runtime.GC()
	r, err := c.Exec(ctx, session.ExecRequest{Cmd: "echo again", YieldTimeMs: ms(30000)})
	var re *session.ResourceError
	fig := fmt.Sprintf("limit %d fds: %d sessions started, then: %v; after: %s", lim.Cur, started, ferr, exitText(r, err))
	switch {
	case ferr == nil:
		return fig, errors.New("no start failed")
	case !errors.As(ferr, &re):
		return fig, errors.New("the failure does not name the limit")
	case err != nil || r.ExitCode == nil || *r.ExitCode != 0:
		return fig, errors.New("starts do not work again")
	}
	return fig, nil
}
