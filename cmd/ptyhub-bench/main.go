// Command ptyhub-bench measures the product's figures through `ptyhub mcp`, each against
// a floor measured in the same run on the same machine, sample by sample interleaved so
// that machine noise hits both alike. It prints a Markdown table for BENCHMARKS.md.
//
//	go run ./cmd/ptyhub-bench              # builds ptyhub, 200 samples a figure
//	go run ./cmd/ptyhub-bench -n 500 -flood 1073741824
//	go run ./cmd/ptyhub-bench -ptyhub BIN -only turn   # only the REPL turn figures (-only exec,flood…: alternate two binaries)
//
//	go run ./cmd/ptyhub-bench -check-inits # CI: fail if a package init takes over 1 ms (a few known ones: their own allowance)
//
// Figures: exec_command of /bin/true; the python3 REPL turn (with wait_for, and without
// it, which relies on waiting-for-input detection); the turn with wait_for through the
// official TypeScript SDK (node testdata/mcpclient/bench.mjs, after `npm ci` there); the
// same turn done by the peers, tmux
// (send-keys + capture-pane polling) and pexpect (in-process Python); exec_command of
// python3 -q until its first prompt; 100 concurrent exec_command calls (p50, p99); the
// CLI's start (`ptyhub version` against a hello-world Go binary, and its slowest package
// init); -idle idle sessions (memory per session, exec latency with them alive);
// optionally a flood through a session (-flood BYTES) against a bare pty read loop. Each
// figure with a target says whether this run met it; the header gives the load average,
// since a loaded machine's run says little about a target.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/ptyhub/ptyhub/pty"
)

func main() {
	n := flag.Int("n", 200, "samples per figure")
	bin := flag.String("ptyhub", "", "ptyhub binary (default: go build ./cmd/ptyhub into a temp dir)")
	flood := flag.Int64("flood", 0, "also measure a flood of this many bytes (e.g. 1073741824)")
	mcpArgs := flag.String("mcp-args", "", "extra arguments for `ptyhub mcp`, e.g. --embedded")
	idle := flag.Int("idle", 1000, "idle sessions to start for the memory and latency-under-load figure (0: skip)")
	remoteHost := flag.String("remote", "", "also measure the REPL turn on this `host` (ssh://…, reached with $PTYHUB_SSH; ptyhub must be on it) against a bare ssh turn")
	inits := flag.Bool("check-inits", false, "only check that no package init of ptyhub takes over 1 ms (for CI), then exit")
	state := flag.String("state", "", "parent `directory` of the run's state directory (transcripts, logs; default $XDG_STATE_HOME, else ~/.local/state: where a user's go)")
	onlyList := flag.String("only", "", "measure only these `figures` (comma-separated: exec, turn, ready, flood, concurrent, idle, cli) and the disk row, for alternated runs of two binaries; exec also prints its distribution (percentiles, slowest samples), turn leaves out tmux's")
	flag.Parse()
	if *inits {
		err := withBinary(*bin, func(bin, _ string) error { return checkInits(bin, 1) })
		if err != nil {
			fmt.Fprintln(os.Stderr, "ptyhub-bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := withBinary(*bin, func(bin, dir string) error {
		only, err := parseOnly(*onlyList)
		if err != nil {
			return err
		}
		return run(*n, bin, dir, *state, *flood, *idle, *mcpArgs, *remoteHost, only)
	}); err != nil {
		fmt.Fprintln(os.Stderr, "ptyhub-bench:", err)
		os.Exit(1)
	}
}

// onlyFigures are the names -only accepts.
var onlyFigures = []string{"exec", "turn", "ready", "flood", "concurrent", "idle", "cli"}

// parseOnly reads -only's list; nil (every figure) for "".
func parseOnly(list string) (map[string]bool, error) {
	if list == "" {
		return nil, nil
	}
	only := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		if !slices.Contains(onlyFigures, name) {
			return nil, fmt.Errorf("-only: no figure %q (one of %s)", name, strings.Join(onlyFigures, ", "))
		}
		only[name] = true
	}
	return only, nil
}

type figure struct {
	name, floorName string
	floor, prod     []time.Duration
	note            string
	// target says in words what the figure should reach ("" for none); met says whether
	// this run reached it.
	target string
	met    func(f figure) bool
}

// overAtMost is a target of at most d over the floor (medians).
func overAtMost(d time.Duration) (string, func(f figure) bool) {
	return "≤ +" + ms(d) + " ms", func(f figure) bool { return med(f.prod)-med(f.floor) <= d }
}

// withTarget returns f with the target of overAtMost(d).
func (f figure) withTarget(d time.Duration) figure {
	f.target, f.met = overAtMost(d)
	return f
}

// verdict is the target column: the target and "pass" or "miss".
func (f figure) verdict() string {
	switch {
	case f.target == "":
		return "—"
	case len(f.prod) == 0 || f.met == nil:
		return f.target + ": not measured"
	case f.met(f):
		return f.target + ": **pass**"
	}
	return f.target + ": **miss**"
}

// The targets of the turn figures.
const (
	turnTarget  = 300 * time.Microsecond  // a REPL turn: pexpect's in-process overhead
	tsTarget    = 600 * time.Microsecond  // the same turn through the TypeScript SDK
	execTarget  = 500 * time.Microsecond  // exec_command of /bin/true
	readyTarget = 1000 * time.Microsecond // python3 -q ready after its prompt
	cliTarget   = 1500 * time.Microsecond // `ptyhub version` over a Go hello
)

func med(d []time.Duration) time.Duration { return pct(d, 50) }

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }

// withBinary calls f with the ptyhub binary to measure (bin, or one built from
// ./cmd/ptyhub as the README installs it: static, CGO_ENABLED=0) and a scratch directory
// removed afterwards.
func withBinary(bin string, f func(bin, dir string) error) error {
	dir, err := os.MkdirTemp("", "ptyhub-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "ptyhub")
		build := exec.Command("go", "build", "-o", bin, "./cmd/ptyhub")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	return f(bin, dir)
}

// run measures the figures; only (nil: all) names those to measure besides the disk row.
func run(n int, bin, dir, stateParent string, flood int64, idle int, mcpArgs, remoteHost string, only map[string]bool) error {
	measures := func(fig string) bool { return only == nil || only[fig] }
	ctx := context.Background()
	args := []string{"mcp"}
	if mcpArgs != "" {
		args = append(args, mcpArgs)
	}
	// The transcripts go where a user's do (a fresh directory beside them), not to
	// /tmp: on this kind of VM creating a file under /tmp cost 0.85 ms of kernel time
	// against ~0.02 ms in a home directory on the same disk, and every session creates
	// two. The disk row below shows what file creation costs there during the run.
	if stateParent == "" {
		stateParent = os.Getenv("XDG_STATE_HOME")
		if !filepath.IsAbs(stateParent) {
			home, err := os.UserHomeDir()
			if err != nil {
				return fmt.Errorf("no home directory for the state: %w (give -state)", err)
			}
			stateParent = filepath.Join(home, ".local", "state")
		}
	}
	if err := os.MkdirAll(stateParent, 0o700); err != nil {
		return err
	}
	stateDir, err := os.MkdirTemp(stateParent, "ptyhub-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	socket := filepath.Join(dir, "server.sock") // a short path: host sockets add to it
	// `ptyhub mcp` starts a server on this private socket; stop it at the end (its pid is
	// in the lock file next to the socket) rather than leave it to its idle exit. The
	// control of the idle figure has a server of its own.
	controlSocket := filepath.Join(dir, "control.sock")
	idleSocket := filepath.Join(dir, "idle.sock")
	defer func() {
		for _, sock := range []string{socket, controlSocket, idleSocket} {
			if b, err := os.ReadFile(sock + ".lock"); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
					syscall.Kill(pid, syscall.SIGTERM)
				}
			}
		}
	}()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PTYHUB_SOCKET="+socket, "XDG_STATE_HOME="+stateDir, "PTYHUB_MAX_SESSIONS="+strconv.Itoa(max(64, idle+100)))
	embedded := strings.Contains(mcpArgs, "--embedded")
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "ptyhub-bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connect to ptyhub mcp: %w", err)
	}
	defer cs.Close()
	timedCall := func(tool string, a map[string]any) (map[string]any, time.Duration, error) {
		return timedCallOn(ctx, cs, tool, a)
	}
	call := func(tool string, a map[string]any) (map[string]any, error) {
		r, _, err := timedCall(tool, a)
		return r, err
	}
	var figs []figure
	figs = append(figs, diskFigure(stateDir))

	// exec_command of /bin/true against spawning it on a bare pty.
	f := figure{name: "exec_command `/bin/true`", floorName: "spawn /bin/true on a bare pty, read to EOF, wait"}
	for i := 0; i < n+10 && measures("exec"); i++ {
		t0 := time.Now()
		if err := bareSpawn("/bin/true"); err != nil {
			return err
		}
		fl := time.Since(t0)
		r, pr, err := timedCall("exec_command", map[string]any{"argv": []string{"/bin/true"}})
		if err != nil {
			return err
		}
		if r["state"] != "exited" {
			return fmt.Errorf("exec true: %v", r)
		}
		call("kill_session", map[string]any{"session_id": r["session_id"], "remove": true})
		if i >= 10 {
			f.floor, f.prod = append(f.floor, fl), append(f.prod, pr)
		}
	}
	f.target = "≤ +0.500 ms, p99 ≤ 3 ms"
	f.met = func(f figure) bool {
		return med(f.prod)-med(f.floor) <= execTarget && pct(f.prod, 99) <= 3*time.Millisecond
	}
	if measures("exec") {
		figs = append(figs, f)
	}
	execFig := f

	// The REPL turn, with and without wait_for.
	if python != "" && measures("turn") {
		turnFloor, stop, err := replFloor()
		if err != nil {
			return err
		}
		r, err := call("exec_command", map[string]any{"argv": []string{python, "-q"}, "wait_for": ">>> $"})
		if err != nil {
			stop()
			return err
		}
		id := r["session_id"]
		for _, wf := range []bool{true, false} {
			f := figure{name: "write_stdin `1+1\\n` to python3 -q, wait_for `>>> `", floorName: "the same turn on a bare pty (write, read until `2\\r\\n>>> `)"}
			if !wf {
				f.name = "write_stdin `1+1\\n` to python3 -q, no wait_for"
			}
			because := map[string]int{}
			for i := 0; i < n+10; i++ {
				fl, err := turnFloor()
				if err != nil {
					stop()
					return err
				}
				a := map[string]any{"session_id": id, "chars": "1+1\n", "yield_time_ms": 10000}
				if wf {
					a["wait_for"] = ">>> $"
				}
				r, pr, err := timedCall("write_stdin", a)
				if err != nil {
					stop()
					return err
				}
				out, _ := r["output"].(string)
				if !bytes.Contains([]byte(out), []byte("2\n>>> ")) {
					// without waiting-for-input detection the call may return early at
					// a partial prompt; poll the rest so the next turn starts clean
					call("write_stdin", map[string]any{"session_id": id, "wait_for": ">>> $", "yield_time_ms": 10000})
				}
				because[fmt.Sprint(r["returned_because"])]++
				if i >= 10 {
					f.floor, f.prod = append(f.floor, fl), append(f.prod, pr)
				}
			}
			f.note = fmt.Sprintf("returned because: %v", because)
			figs = append(figs, f.withTarget(turnTarget))
		}
		// The same turn through the TypeScript SDK, on its own `ptyhub mcp`.
		tsName := "write_stdin `1+1\\n` to python3 -q, `wait_for`, through the TypeScript SDK"
		if fl, pr, err := tsTurns(n, bin, cmd.Env, turnFloor); err != nil {
			figs = append(figs, figure{name: tsName, note: "not measured: " + err.Error()})
		} else {
			figs = append(figs, figure{name: tsName, floorName: "bare pty turn", floor: fl, prod: pr, note: "node " + tsDriver}.withTarget(tsTarget))
		}
		// The peers doing the same turn, against the same floor.
		if only != nil {
			// tmux's turn (milliseconds) is not a peer of the figures -only compares.
		} else if fl, pr, note, err := tmuxTurns(n, turnFloor); err != nil {
			figs = append(figs, figure{name: "peer: tmux REPL turn", note: "not measured: " + err.Error()})
		} else {
			figs = append(figs, figure{name: "peer: tmux REPL turn", floorName: "bare pty turn", floor: fl, prod: pr, note: note})
		}
		if fl, pr, err := pexpectTurns(n, turnFloor); err != nil {
			figs = append(figs, figure{name: "peer: pexpect REPL turn (in-process Python)", note: "not measured: " + err.Error()})
		} else {
			figs = append(figs, figure{name: "peer: pexpect REPL turn (in-process Python)", floorName: "bare pty turn", floor: fl, prod: pr, note: "sendline, expect_exact, delaybeforesend=None"})
		}
		stop()
		call("kill_session", map[string]any{"session_id": id, "remove": true})
	}
	if python != "" && measures("ready") {
		// exec_command of python3 -q until its first prompt.
		f := figure{name: "exec_command `python3 -q` (no wait_for) until it returns", floorName: "python3 -q on a bare pty until `>>> ` is printed"}
		because := map[string]int{}
		for i := 0; i < min(n, 200)+3; i++ {
			fl, err := firstPrompt()
			if err != nil {
				return err
			}
			r, pr, err := timedCall("exec_command", map[string]any{"argv": []string{python, "-q"}, "yield_time_ms": 10000})
			if err != nil {
				return err
			}
			because[fmt.Sprint(r["returned_because"])]++
			call("kill_session", map[string]any{"session_id": r["session_id"], "remove": true})
			if i >= 3 {
				f.floor, f.prod = append(f.floor, fl), append(f.prod, pr)
			}
		}
		f.note = fmt.Sprintf("returned because: %v", because)
		figs = append(figs, f.withTarget(readyTarget))
	}

	if !measures("flood") {
		flood = 0
	}
	if !measures("idle") {
		idle = 0
	}
	if remoteHost != "" {
		f, err := remoteTurn(n, remoteHost, call)
		if err != nil {
			return fmt.Errorf("remote turn: %w", err)
		}
		figs = append(figs, f)
	}

	// The flood comes before the concurrent calls and the idle sessions: removing a
	// thousand sessions deletes two thousand files, and on this kind of VM the kernel
	// is still busy with that (ext4 with discard) for the next minute.
	if flood > 0 {
		// Three samples of each, alternating: one flood's ratio varies by ±10% here (the
		// kernel's writeback of the transcript, the VM); the medians are reported.
		script := "head -c " + strconv.FormatInt(flood, 10) + " /dev/zero | tr '\\0' a"
		var fl, pr []time.Duration
		because := map[string]int{}
		for range 3 {
			syscall.Sync() // start each sample with no writeback of the last one pending
			t0 := time.Now()
			if err := bareSpawn("sh", "-c", script); err != nil {
				return err
			}
			fl = append(fl, time.Since(t0))
			syscall.Sync()
			r, d, err := timedCall("exec_command", map[string]any{"cmd": script, "yield_time_ms": 600000})
			if err != nil {
				return err
			}
			pr = append(pr, d)
			because[fmt.Sprint(r["returned_because"])]++
			call("kill_session", map[string]any{"session_id": r["session_id"], "remove": true})
		}
		mb := float64(flood) / 1e6
		fs, ps := med(fl).Seconds(), med(pr).Seconds()
		figs = append(figs, figure{name: fmt.Sprintf("exec_command of a %d-byte flood into 10,000 tokens (3 samples)", flood),
			floorName: "bare pty read loop of the same flood", floor: fl, prod: pr,
			note:   fmt.Sprintf("floor %.1f MB/s, ptyhub %.1f MB/s (%.0f%% of floor; samples %s), returned because %v", mb/fs, mb/ps, 100*fs/ps, floodRatios(fl, pr), because),
			target: "≥ 90% of the floor in every sample", met: func(f figure) bool {
				for i := range f.floor {
					if f.floor[i].Seconds()/f.prod[i].Seconds() < 0.90 {
						return false
					}
				}
				return true
			}})
		syscall.Sync() // the figures after it start with the floods' transcripts written back
	}

	// 100 concurrent exec_command calls.
	if measures("concurrent") {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		bad := 0
		for i := 0; i < 100; i++ {
			wg.Go(func() {
				t0 := time.Now()
				r, err := call("exec_command", map[string]any{"cmd": "echo x" + strconv.Itoa(i)})
				d := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				lat = append(lat, d)
				if err != nil || r["output"] != "x"+strconv.Itoa(i)+"\n" {
					bad++
				}
				if err == nil {
					go call("kill_session", map[string]any{"session_id": r["session_id"], "remove": true})
				}
			})
		}
		wg.Wait()
		figs = append(figs, figure{name: "100 concurrent exec_command `echo`", prod: lat,
			note: fmt.Sprintf("p50 %s ms, p99 %s ms, p99/p50 %.2f, wrong results %d", ms(pct(lat, 50)), ms(pct(lat, 99)), float64(pct(lat, 99))/float64(pct(lat, 50)), bad)})
	}

	if idle > 0 {
		var closers []*mcp.ClientSession
		defer func() {
			for _, cs := range closers {
				cs.Close()
			}
		}()
		// The idle sessions live in a fresh `ptyhub mcp` (and server, with --keep): the
		// first one's heap still holds what the flood and the other figures left, which
		// the sessions would reuse, and the RSS growth would understate what they cost.
		// start runs another `ptyhub mcp` with its own socket (and so its own server) and
		// the run's state directory; it returns its command and a caller of its tools,
		// closed when run returns.
		start := func(sock string, env ...string) (*exec.Cmd, func(string, map[string]any) (map[string]any, error), error) {
			c := exec.Command(bin, args...)
			c.Env = append(append(os.Environ(), "PTYHUB_SOCKET="+sock, "XDG_STATE_HOME="+stateDir), env...)
			c.Stderr = os.Stderr
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: c}, nil)
			if err != nil {
				return nil, nil, err
			}
			closers = append(closers, cs)
			return c, func(tool string, a map[string]any) (map[string]any, error) {
				r, _, err := timedCallOn(ctx, cs, tool, a)
				return r, err
			}, nil
		}
		icmd, icall, err := start(idleSocket, "PTYHUB_MAX_SESSIONS="+strconv.Itoa(idle+100))
		if err != nil {
			return fmt.Errorf("connect to the idle sessions' ptyhub mcp: %w", err)
		}
		managerPid := func() int {
			if embedded || !strings.Contains(mcpArgs, "--keep") {
				return icmd.Process.Pid // the sessions live in ptyhub mcp
			}
			b, err := os.ReadFile(idleSocket + ".lock")
			if err != nil {
				return 0
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return pid
		}
		// The control: a third `ptyhub mcp`, started as the others, with no sessions. It
		// keeps its transcripts in the same directory, as all of a user's do: what the
		// figure compares is sessions alive, not a fuller directory (where, on this kind
		// of VM, creating a file costs more).
		_, control, err := start(controlSocket)
		if err != nil {
			return fmt.Errorf("connect to a second ptyhub mcp: %w", err)
		}
		// A warm-up call, so the manager and its reaper run before the first reading.
		if r, err := icall("exec_command", map[string]any{"argv": []string{"/bin/true"}}); err == nil {
			icall("kill_session", map[string]any{"session_id": r["session_id"], "remove": true})
		}
		f, err := idleSessions(idle, min(n, 100), managerPid, icall, control)
		if err != nil {
			return err
		}
		figs = append(figs, f)
	}

	if measures("cli") {
		cf, err := cliStart(min(n, 50), bin, dir)
		if err != nil {
			return err
		}
		figs = append(figs, cf.withTarget(cliTarget))
	}

	printTable(figs, n)
	if only["exec"] {
		printDistribution(execFig)
	}
	return nil
}

// printTable prints the run's header and its figures as a Markdown table.
func printTable(figs []figure, n int) {
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("Measured %s on %s/%s, %d CPUs, %d samples per figure (after warm-up); load average at the end: %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), n, strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
	fmt.Println("| figure | floor (same run) | floor median ms | ptyhub median ms | over floor ms | ratio | ptyhub p99 ms | target | note |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	passed, missed := 0, 0
	for _, f := range figs {
		if f.target != "" && len(f.prod) > 0 && f.met != nil {
			if f.met(f) {
				passed++
			} else {
				missed++
			}
		}
		if len(f.prod) == 0 {
			fmt.Printf("| %s | — | — | — | — | — | — | %s | %s |\n", f.name, f.verdict(), f.note)
			continue
		}
		if len(f.floor) == 0 {
			fmt.Printf("| %s | — | — | %s | — | — | %s | %s | %s |\n", f.name, ms(med(f.prod)), ms(pct(f.prod, 99)), f.verdict(), f.note)
			continue
		}
		fmed, pmed := med(f.floor), med(f.prod)
		fmt.Printf("| %s | %s | %s | %s | %s | %.2f | %s | %s | %s |\n", f.name, f.floorName, ms(fmed), ms(pmed), ms(pmed-fmed), float64(pmed)/float64(fmed), ms(pct(f.prod, 99)), f.verdict(), f.note)
	}
	fmt.Printf("\nTargets: %d passed, %d missed (a run on a loaded machine says little about either).\n", passed, missed)
}

// printDistribution prints f's percentiles, floor and ptyhub alike, and its ten slowest
// samples of ptyhub with their index and the floor measured just before each.
func printDistribution(f figure) {
	fmt.Printf("\n%s, distribution (ms):\n\n| | p10 | p50 | p90 | p95 | p99 | max |\n|---|---|---|---|---|---|---|\n", f.name)
	for _, r := range []struct {
		name string
		d    []time.Duration
	}{{"floor", f.floor}, {"ptyhub", f.prod}} {
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s |\n", r.name, ms(pct(r.d, 10)), ms(pct(r.d, 50)), ms(pct(r.d, 90)), ms(pct(r.d, 95)), ms(pct(r.d, 99)), ms(pct(r.d, 100)))
	}
	idx := make([]int, len(f.prod))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(f.prod[b] - f.prod[a]) })
	fmt.Printf("\nslowest (sample: ptyhub ms / its floor ms):")
	for _, i := range idx[:min(10, len(idx))] {
		fmt.Printf(" %d: %s / %s;", i, ms(f.prod[i]), ms(f.floor[i]))
	}
	fmt.Println()
}

// bareSpawn starts argv on a fresh pty, reads until EOF and waits: the spawn floor.
func bareSpawn(argv ...string) error {
	m, slave, err := pty.Open(24, 80)
	if err != nil {
		return err
	}
	defer m.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		slave.Close()
		return err
	}
	slave.Close()
	io.Copy(io.Discard, m)
	return cmd.Wait()
}

// python is the Python interpreter the REPL figures run, ptyhub and floors alike: the
// executable python3 resolves to, not a wrapper such as pyenv's shim (a bash script
// whose start-up, ~80 ms here with a spread of several ms, would drown a difference of a
// millisecond). "" when there is no python3.
var python = func() string {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return ""
	}
	if p := strings.TrimSpace(string(out)); filepath.IsAbs(p) {
		return p
	}
	return "python3"
}()

func startPython() (*pty.Master, *exec.Cmd, error) {
	m, slave, err := pty.Open(24, 80)
	if err != nil {
		return nil, nil, err
	}
	py := exec.Command(python, "-q")
	py.Env = append(os.Environ(), "TERM=xterm-256color", "NO_COLOR=1")
	py.Stdin, py.Stdout, py.Stderr = slave, slave, slave
	py.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	err = py.Start()
	slave.Close()
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, py, nil
}

func readUntil(m *pty.Master, want []byte) error {
	buf := make([]byte, 4096)
	var acc []byte
	for !bytes.Contains(acc, want) {
		n, err := m.Read(buf)
		if err != nil {
			return err
		}
		acc = append(acc, buf[:n]...)
	}
	return nil
}

// replFloor keeps a python3 -q on a bare pty; each call times one turn.
func replFloor() (turn func() (time.Duration, error), stop func(), err error) {
	m, py, err := startPython()
	if err != nil {
		return nil, nil, err
	}
	stop = func() { m.Close(); py.Process.Kill(); py.Wait() }
	if err := readUntil(m, []byte(">>> ")); err != nil {
		stop()
		return nil, nil, err
	}
	return func() (time.Duration, error) {
		t0 := time.Now()
		if _, err := m.Write([]byte("1+1\n")); err != nil {
			return 0, err
		}
		err := readUntil(m, []byte("2\r\n>>> "))
		return time.Since(t0), err
	}, stop, nil
}

// firstPrompt times python3 -q on a bare pty from start to its first prompt.
func firstPrompt() (time.Duration, error) {
	t0 := time.Now()
	m, py, err := startPython()
	if err != nil {
		return 0, err
	}
	defer func() { m.Close(); py.Process.Kill(); py.Wait() }()
	err = readUntil(m, []byte(">>> "))
	return time.Since(t0), err
}

// diskFigure times creating, writing and closing a small file in the run's state
// directory (what each session's transcript costs there), 200 times.
func diskFigure(dir string) figure {
	var d []time.Duration
	for i := range 200 {
		name := filepath.Join(dir, "probe-"+strconv.Itoa(i))
		t0 := time.Now()
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return figure{name: "disk: create a file in the state directory", note: "not measured: " + err.Error()}
		}
		f.Write([]byte("[0.000000, \"o\", \"probe\"]\n"))
		f.Close()
		d = append(d, time.Since(t0))
	}
	for i := range 200 {
		os.Remove(filepath.Join(dir, "probe-"+strconv.Itoa(i)))
	}
	return figure{name: "disk: create, write and close a file in the state directory", prod: d,
		note: "each session creates two (its .cast and .log); " + dir}
}

// timedCallOn calls a tool through cs and times the call alone (the client's CallTool:
// request out, result in and decoded by the SDK), not this program's look at the result.
func timedCallOn(ctx context.Context, cs *mcp.ClientSession, tool string, a map[string]any) (map[string]any, time.Duration, error) {
	t0 := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	d := time.Since(t0)
	if err != nil {
		return nil, d, err
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	json.Unmarshal(b, &out)
	if res.IsError {
		return out, d, fmt.Errorf("%s: tool error: %v", tool, res.Content)
	}
	return out, d, nil
}

// floodRatios lists each pair's throughput as a percentage of its floor's.
func floodRatios(fl, pr []time.Duration) string {
	var out []string
	for i := range fl {
		out = append(out, fmt.Sprintf("%.0f%%", 100*fl[i].Seconds()/pr[i].Seconds()))
	}
	return strings.Join(out, " ")
}
