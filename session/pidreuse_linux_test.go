//go:build linux

package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// pidnsEnv marks the copy of the test binary that runs inside a fresh pid namespace.
const pidnsEnv = "PTYHUB_TEST_PIDNS"

// TestSignalNeverHitsReusedPid: once a session's leader has exited and been reaped, its
// pid can go to an unrelated process; signalling or killing the ended session, through
// the client (kill_session with and without a signal) or straight through the reaper
// (SignalGroup, Kill), must not reach that process. The test runs itself again as pid 1
// of a fresh pid namespace (unshare, as root), where it alone allocates pids, and gives
// the old leader's pid to the unrelated process by writing ns_last_pid: the process is
// made a group leader, so both kill(pid) and kill(-pgid) would hit it. It blocks every
// signal it can, so a signal sent to it stays pending in /proc/PID/status, where the
// test looks once every call has returned.
func TestSignalNeverHitsReusedPid(t *testing.T) {
	if os.Getenv(pidnsEnv) == "" {
		t.Parallel() // the test itself runs in its own pid namespace, in a child process
		runInPidNamespace(t, "TestSignalNeverHitsReusedPid")
		return
	}
	if os.Getpid() != 1 {
		t.Fatalf("%s is set but this process is pid %d, not the first of a new pid namespace", pidnsEnv, os.Getpid())
	}
	m, c := scNewClient(t)
	for _, tty := range []bool{true, false} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"true"}, TTY: &tty, YieldTimeMs: new(int64(20000))})
			if err != nil {
				t.Fatal(err)
			}
			scUntilExit(t, c, r)
			s, err := m.lookup(r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			victim := takePid(t, s.pid)

			for _, sig := range []string{"TERM", "INT", "HUP", "KILL"} {
				_, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID, Signal: sig})
				if !errors.Is(err, ErrExited) {
					t.Errorf("kill_session signal %s on the ended session: got %v, want %v", sig, err, ErrExited)
				}
			}
			if _, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID}); err != nil {
				t.Errorf("kill_session on the ended session: %v", err)
			}
			rp := s.rp.Load()
			if err := rp.SignalGroup(s.uuid, syscall.SIGTERM); err == nil {
				t.Errorf("the reaper signalled the group of session %s, whose leader %d is reaped", s.uuid, s.pid)
			}
			if surv, err := rp.Kill(s.uuid, 100*time.Millisecond, true); err != nil || len(surv) > 0 {
				t.Errorf("the reaper's kill of the ended session: survivors %v, error %v; want none", surv, err)
			}
			victim.check(t)
		})
	}
}

// runInPidNamespace runs the test named name again as pid 1 of a new pid and mount
// namespace (unshare -fp --mount-proc) and fails t if it fails there. Without root or
// unshare it skips t, or fails it when CI=true.
func runInPidNamespace(t *testing.T, name string) {
	t.Helper()
	testtool.KernelOnly(t, "pids are reused by the Linux kernel")
	if os.Geteuid() != 0 {
		testtool.Missing(t, "a new pid namespace needs root")
	}
	unshare := testtool.Path(t, "unshare")
	testtool.Need(t, "python3")
	if out, err := exec.Command(unshare, "-fp", "--mount-proc", "true").CombinedOutput(); err != nil {
		testtool.Missing(t, fmt.Sprintf("unshare -fp --mount-proc fails (%v: %s)", err, strings.TrimSpace(string(out))))
	}
	args := []string{"-fp", "--mount-proc", os.Args[0], "-test.run=^" + name + "$", "-test.count=1", "-test.v"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd := exec.Command(unshare, args...)
	cmd.Env = append(os.Environ(), pidnsEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a new pid namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("in a new pid namespace, %s did not pass:\n%s", name, out)
	}
	t.Logf("in a new pid namespace:\n%s", out)
}

// reuser is an unrelated process (the test's child, not the session's) that holds a pid
// a session's leader had, as its own process group, with every blockable signal blocked.
type reuser struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// takePid starts reusers until one gets pid, which must be free (its old owner reaped)
// or about to be. Only this test creates processes in its pid namespace: setting
// ns_last_pid to pid-1 makes the next fork get pid unless it is still taken, in which
// case the reuser is stopped and the next one tries again. The process is ended when t
// ends.
func takePid(t *testing.T, pid int) *reuser {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for tries := 1; ; tries++ {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Fatalf("setting the next pid: %v", err)
		}
		r := startReuser(t)
		if r.cmd.Process.Pid == pid {
			t.Cleanup(func() { r.stop(t) })
			t.Logf("pid %d taken by an unrelated process group after %d tries", pid, tries)
			return r
		}
		got := r.cmd.Process.Pid
		r.stop(t)
		if time.Now().After(deadline) {
			// Not a signal sent to the wrong process: this run could not hand the pid
			// to another process, so it proves nothing either way.
			t.Skipf("pid %d of the ended session's leader was not free within 30 s (the last process started got %d): reuse could not be forced in this run", pid, got)
		}
	}
}

// startReuser starts a python3 that blocks every signal it can, becomes its own process
// group, says ready once the mask is set, and exits 0 at the end of its stdin.
func startReuser(t *testing.T) *reuser {
	t.Helper()
	const prog = `import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.read()
`
	cmd := exec.Command("python3", "-c", prog)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	in, out := testtool.StartPiped(t, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the pid reuser did not start: %q, %v", line, err)
	}
	return &reuser{cmd: cmd, stdin: in}
}

// check fails t if the reuser got any signal: it is alive, still its own group, and has
// nothing pending.
func (r *reuser) check(t *testing.T) {
	t.Helper()
	pid := r.cmd.Process.Pid
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("the unrelated process %d that reused the pid is gone: %v", pid, err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		k, v, _ := strings.Cut(l, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				t.Errorf("the unrelated process %d that reused the pid was killed (state %s)", pid, v)
			}
		case "SigPnd", "ShdPnd":
			if n, _ := strconv.ParseUint(v, 16, 64); n != 0 {
				t.Errorf("the unrelated process %d that reused the pid was signalled: %s %s", pid, k, v)
			}
		}
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("the unrelated process %d is not its own group any more: pgid %d, %v", pid, pgid, err)
	}
}

// stop ends the reuser by closing its stdin and checks it exited 0 (no signal reached it).
func (r *reuser) stop(t *testing.T) {
	t.Helper()
	if r.stdin == nil {
		return
	}
	r.stdin.Close()
	r.stdin = nil
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("the unrelated process %d: %v", r.cmd.Process.Pid, err)
	}
}

// TestSignalNeverHitsReusedForegroundGroup: kill_session with a signal on a terminal goes
// to the terminal's foreground group while that group lives; once it has ended (and the
// program did not take the terminal back) the terminal still names it, and the signal
// must not go to that number when an unrelated process group has it. Run in a fresh pid
// namespace, like TestSignalNeverHitsReusedPid.
func TestSignalNeverHitsReusedForegroundGroup(t *testing.T) {
	if os.Getenv(pidnsEnv) == "" {
		t.Parallel() // the test itself runs in its own pid namespace, in a child process
		runInPidNamespace(t, "TestSignalNeverHitsReusedForegroundGroup")
		return
	}
	if os.Getpid() != 1 {
		t.Fatalf("%s is set but this process is pid %d, not the first of a new pid namespace", pidnsEnv, os.Getpid())
	}
	// The leader gives the terminal to a child in its own group and says how it ended;
	// then to a second child that exits at once, which it reaps, says which pid that
	// child had, and waits.
	const prog = `import os, signal, sys
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
def child(r):
    c = os.fork()
    if c == 0:
        os.setpgid(0, 0)
        os.read(r, 1)
        os._exit(0)
    os.setpgid(c, c)
    os.tcsetpgrp(0, c)
    return c
r, w = os.pipe()
c = child(r)
sys.stdout.write("fg=%d;\n" % c); sys.stdout.flush()
_, st = os.waitpid(c, 0)
sys.stdout.write("ended=%d;\n" % st); sys.stdout.flush()
c = child(r)
os.write(w, b"x")
os.waitpid(c, 0)
sys.stdout.write("gone=%d;\n" % os.tcgetpgrp(0)); sys.stdout.flush()
os.read(r, 1)
`
	m, c := scNewClient(t)
	r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"python3", "-c", prog}, WaitFor: `^fg=[0-9]+;`, YieldTimeMs: new(int64(20000))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID, Signal: "TERM"}); err != nil {
		t.Fatalf("kill_session signal TERM to the live foreground group: %v", err)
	}
	r, err = c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, WaitFor: `^gone=[0-9]+;`, YieldTimeMs: new(int64(20000))})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Output, "ended=15;") {
		t.Fatalf("the live foreground group did not get SIGTERM (want ended=15): %q", r.Output)
	}
	_, rest, ok := strings.Cut(r.Output, "gone=")
	num, _, ok2 := strings.Cut(rest, ";")
	fg, err := strconv.Atoi(num)
	if !ok || !ok2 || err != nil {
		t.Fatalf("the program did not say its ended foreground group: %q", r.Output)
	}
	s, err := m.lookup(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.master.ForegroundPgrp(); err != nil || got != fg {
		t.Fatalf("the terminal's foreground group is %d (%v), want the ended group %d", got, err, fg)
	}
	victim := takePid(t, fg)
	if _, err := c.Kill(context.Background(), KillRequest{SessionID: r.SessionID, Signal: "TERM"}); err != nil {
		t.Errorf("kill_session signal TERM: %v", err)
	}
	victim.check(t)
}
