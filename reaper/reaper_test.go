package reaper

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/pty"
)

// TestMain lets the test binary act as a crashing manager (see TestManagerCrash).
func TestMain(m *testing.M) {
	if os.Getenv("REAPER_TEST_MANAGER") == "1" {
		crashingManager()
		return
	}
	os.Exit(m.Run())
}

func startReaper(t *testing.T) *Reaper {
	t.Helper()
	r, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(10 * time.Second) })
	return r
}

// spawnPTY starts argv on a new pty and returns the master and the exit channel.
func spawnPTY(t *testing.T, r *Reaper, tag string, argv ...string) (*pty.Master, int, <-chan Exit) {
	t.Helper()
	m, slave, err := pty.Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	path, err := exec.LookPath(argv[0])
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), EnvSession+"="+tag, "PS1=$ ")
	pid, exit, err := r.Spawn(Spec{Path: path, Argv: argv, Env: env, Ctty: true, Tag: tag}, slave, slave, slave)
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	return m, pid, exit
}

func TestSpawnExitStatus(t *testing.T) {
	r := startReaper(t)
	cases := []struct {
		script string
		want   pty.ExitStatus
	}{
		{"exit 0", pty.ExitStatus{Code: 0}},
		{"exit 3", pty.ExitStatus{Code: 3}},
		{"kill -TERM $$", pty.ExitStatus{Code: -1, Signal: syscall.SIGTERM}},
		{"kill -KILL $$", pty.ExitStatus{Code: -1, Signal: syscall.SIGKILL}},
	}
	for i, c := range cases {
		m, _, exit := spawnPTY(t, r, fmt.Sprint("exit-", i), "sh", "-c", c.script)
		go io.Copy(io.Discard, m)
		e := <-exit
		if e.Err != nil {
			t.Fatal(e.Err)
		}
		if got := pty.DecodeWaitStatus(e.Status); got != c.want {
			t.Errorf("%q: got %+v, want %+v", c.script, got, c.want)
		}
	}
}

func TestSpawnOutputAndChildState(t *testing.T) {
	r := startReaper(t)
	// The child has a controlling tty, fds 0-2 only, default dispositions, nothing blocked.
	m, _, exit := spawnPTY(t, r, "state", "sh", "-c",
		`echo via-dev-tty > /dev/tty; ls /proc/self/fd | tr '\n' ' '; echo; grep -E '^Sig(Ign|Blk)' /proc/self/status`)
	out, _ := io.ReadAll(m)
	<-exit
	s := string(out)
	for _, want := range []string{"via-dev-tty", "0 1 2 3 \r\n", "SigIgn:\t0000000000000000", "SigBlk:\t0000000000000000"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// alive reports which of pids still exist and are not zombies.
func alive(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if p, err := proc.Stat(pid); err == nil && !p.Dead() {
			out = append(out, pid)
		}
	}
	return out
}

// waitHeldZombie polls until the held leader pid has exited and is a zombie not yet
// reaped; the limit only bounds a failing test.
func waitHeldZombie(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if p, err := proc.Stat(pid); err == nil && p.Dead() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader %d did not exit", pid)
		}
	}
}

// waitGone waits until none of pids is alive (proctest.WaitExited).
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	proctest.WaitExited(t, pids, "still alive")
}

// jobScript starts, under an interactive bash, the jobs that defeat killpg: a plain job, a job ignoring HUP and TERM, a nohup job, a setsid escaper, and a
// foreground job; it prints their pids (the job ignoring HUP and TERM prints its own once
// its trap is set, so it ignores them by the time the test goes on).
const jobScript = `sleep 1001 & echo PID $!
(trap '' HUP TERM; echo PID $BASHPID; exec sleep 1002) &
nohup sleep 1004 >/dev/null 2>&1 & echo PID $!
setsid sh -c 'echo PID $$; exec sleep 1005' </dev/null 2>/dev/null &
sleep 1003
`

// untilPrompt reads rd until an interactive shell printed its prompt. Input written
// before that may be thrown away: bash sets the terminal up as it starts (typeahead then
// was lost in about one run in a thousand, and the test waited for ever).
func untilPrompt(rd *bufio.Reader, prompt string) error {
	var seen []byte
	for !bytes.HasSuffix(seen, []byte(prompt)) {
		b, err := rd.ReadByte()
		if err != nil {
			return fmt.Errorf("waiting for the prompt %q (got %q): %w", prompt, seen, err)
		}
		seen = append(seen, b)
	}
	return nil
}

func readPids(t *testing.T, rd *bufio.Reader, n int) []int {
	t.Helper()
	var pids []int
	for len(pids) < n {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading pids: %v (have %v)", err, pids)
		}
		for _, m := range pidLine.FindAllStringSubmatch(line, -1) {
			pid, _ := strconv.Atoi(m[1])
			pids = append(pids, pid)
		}
	}
	return pids
}

// pidLine finds a pid printed by jobScript anywhere in a line: a background job's
// output can land on the line of the shell's next prompt ("$ PID 123"), which a check
// for lines starting with "PID " missed (the test then waited for ever).
var pidLine = regexp.MustCompile(`PID (\d+)`)

func TestKillJobControlTree(t *testing.T) {
	r := startReaper(t)
	m, leader, exit := spawnPTY(t, r, "jobs", "bash", "--norc", "--noprofile", "-i")
	rd := bufio.NewReader(m)
	if err := untilPrompt(rd, "$ "); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Write([]byte("stty -echo\n" + jobScript)); err != nil {
		t.Fatal(err)
	}
	pids := append(readPids(t, rd, 4), leader)
	go io.Copy(io.Discard, rd)
	surv, err := r.Kill("jobs", DefaultGrace, true)
	if err != nil {
		t.Fatal(err)
	}
	if e := <-exit; e.Err != nil {
		t.Fatal(e.Err)
	}
	waitGone(t, pids)
	if len(surv) < 5 {
		t.Errorf("kill found %d processes, want at least 5 (bash, 4 jobs, foreground sleep): %+v", len(surv), surv)
	}
}

// TestManagerCrash kills a manager with SIGKILL and expects the reaper to end every
// process of its sessions, SIGHUP-ignoring ones and setsid escapers included.
func TestManagerCrash(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "REAPER_TEST_MANAGER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(out)
	pids := readPids(t, rd, 6) // reaper, leader, and 4 jobs
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, pids)
}

// crashingManager starts a reaper and a job-control session, prints the pids, then waits
// to be killed.
func crashingManager() {
	r, err := Start(nil)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	m, slave, _ := pty.Open(24, 80)
	path, _ := exec.LookPath("bash")
	env := append(os.Environ(), EnvSession+"=crash", "PS1=$ ")
	pid, _, err := r.Spawn(Spec{Path: path, Argv: []string{"bash", "--norc", "--noprofile", "-i"}, Env: env, Ctty: true, Tag: "crash"}, slave, slave, slave)
	slave.Close()
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Printf("PID %d\nPID %d\n", r.Pid(), pid)
	rd := bufio.NewReader(m)
	if err := untilPrompt(rd, "$ "); err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	m.Write([]byte("stty -echo\n" + jobScript))
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			os.Exit(1)
		}
		for _, m := range pidLine.FindAllString(line, -1) {
			fmt.Print(m + "\n")
		}
	}
}

// Orphans are found without listing the leaders: every leader is forked by one thread of
// the reaper, the orphans are on the other threads' children lists, so an exit costs
// O(its session) however many sessions are alive. A setsid escaper of a held leader that
// exited is still named (from the manager's side and in the release) and killed.
func TestOrphansFoundWithoutListingLeaders(t *testing.T) {
	testtool.KernelOnly(t, "orphans are found through the subreaper's spawning thread")
	r := startReaper(t)
	var idle []int
	for i := range 10 {
		_, pid, _ := spawnPTY(t, r, "idle-"+strconv.Itoa(i), "sleep", "1000")
		idle = append(idle, pid)
	}
	t.Cleanup(func() { r.Kill("", time.Second, true) })
	m, slave, err := pty.Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sh, _ := exec.LookPath("sh")
	script := `setsid sh -c 'echo PID $$; exec sleep 1006' </dev/null & read x`
	env := append(os.Environ(), EnvSession+"=esc")
	leader, _, err := r.Spawn(Spec{Path: sh, Argv: []string{"sh", "-c", script}, Env: env, Ctty: true, Tag: "esc", Hold: true}, slave, slave, slave)
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	esc := readPids(t, bufio.NewReader(m), 1)[0]
	if _, err := m.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	waitHeldZombie(t, leader)
	r.mu.Lock()
	spawner := r.spawner
	r.mu.Unlock()
	cands, ok := orphanCandidates(r.Pid(), spawner)
	if !ok {
		t.Fatalf("no spawning thread known (spawner %d)", spawner)
	}
	for _, pid := range append(idle, leader) {
		if slices.Contains(cands, pid) {
			t.Errorf("leader %d among the orphan candidates %v", pid, cands)
		}
	}
	// The escaper re-parents once the leader is gone; it is then a candidate.
	var named []int
	for _, s := range r.Survivors("esc") {
		named = append(named, s.PID)
	}
	if !slices.Contains(named, esc) {
		t.Errorf("survivors %v miss the setsid escaper %d", named, esc)
	}
	e, err := r.Release("esc", leader)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(e.Survivors, func(s Survivor) bool { return s.PID == esc }) {
		t.Errorf("release names %v, not the escaper %d", e.Survivors, esc)
	}
	waitGone(t, []int{esc})
	if got := alive(idle); len(got) != len(idle) {
		t.Errorf("idle leaders alive %v of %v", got, idle)
	}
}

// TestOnExitCalled: Spec.OnExit gets the leader's Exit, the same the exit channel has,
// once; for a held leader it is called when the reaper dies, with ErrDead, so a caller
// needs no goroutine on the channel to learn either.
func TestOnExitCalled(t *testing.T) {
	r := startReaper(t)
	spawn := func(tag, script string, hold bool) (int, <-chan Exit, chan Exit) {
		m, slave, err := pty.Open(24, 80)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		got := make(chan Exit, 2)
		env := append(os.Environ(), EnvSession+"="+tag)
		pid, exit, err := r.Spawn(Spec{Path: "/bin/sh", Argv: []string{"sh", "-c", script}, Env: env, Ctty: true,
			Tag: tag, Hold: hold, OnExit: func(e Exit) { got <- e }}, slave, slave, slave)
		slave.Close()
		if err != nil {
			t.Fatal(err)
		}
		return pid, exit, got
	}
	_, exit, got := spawn("onexit", "exit 3", false)
	e := <-got
	if st := pty.DecodeWaitStatus(e.Status); st.Code != 3 || e.Err != nil {
		t.Errorf("OnExit got %+v (%v), want exit code 3", st, e.Err)
	}
	if c := <-exit; c.Status != e.Status {
		t.Errorf("the channel has status %v, OnExit got %v", c.Status, e.Status)
	}
	pid, _, got := spawn("onexit-held", "exec sleep 1000", true)
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err := syscall.Kill(r.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if e := <-got; !errors.Is(e.Err, ErrDead) {
		t.Errorf("held leader, reaper killed: OnExit got %+v, want ErrDead", e)
	}
	select {
	case e := <-got:
		t.Errorf("OnExit called twice: %+v", e)
	default:
	}
}

// TestRaceBuiltHelperExitsAtOnce: a race-built helper (the tests') is started with
// atexit_sleep_ms=0 in GORACE, so it does not sleep 1 s at its exit, which every
// Manager.Close waits for; GORACE's other options are kept, and a value of its own wins.
func TestRaceBuiltHelperExitsAtOnce(t *testing.T) {
	if !raceBuild {
		t.Skip("only a race-built helper sleeps at its exit")
	}
	for _, c := range []struct{ set, want string }{
		{"", "atexit_sleep_ms=0"},
		{"halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"atexit_sleep_ms=50 halt_on_error=1", "atexit_sleep_ms=50 halt_on_error=1"},
	} {
		t.Setenv("GORACE", c.set)
		if c.set == "" {
			os.Unsetenv("GORACE")
		}
		r := startReaper(t)
		// Start returns once the exec is under way; the environment shows at its end.
		got, _, read := proc.LookupEnv(r.Pid(), "GORACE")
		for deadline := time.Now().Add(time.Minute); !read && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond) // a process's state: no event to wait on
			got, _, read = proc.LookupEnv(r.Pid(), "GORACE")
		}
		if got != c.want {
			t.Errorf("GORACE %q: the helper has GORACE %q; want %q", c.set, got, c.want)
		}
	}
}
