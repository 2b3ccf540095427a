//go:build linux

package testtool

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PidNamespaceEnv marks the copy of a test binary that RunInPidNamespace runs inside a
// fresh pid namespace: a test that finds it set is pid 1 there and does the work.
const PidNamespaceEnv = "PTYHUB_TEST_PIDNS"

// RunInPidNamespace runs the test named name again as pid 1 of a new pid and mount
// namespace (unshare -fp --mount-proc) and fails t if it fails there. Without root or
// unshare it skips t, or fails it when CI=true.
func RunInPidNamespace(t *testing.T, name string) {
	t.Helper()
	KernelOnly(t, "pids are reused by the Linux kernel")
	if os.Geteuid() != 0 {
		Missing(t, "a new pid namespace needs root")
	}
	unshare := Path(t, "unshare")
	Need(t, "python3")
	if out, err := exec.Command(unshare, "-fp", "--mount-proc", "true").CombinedOutput(); err != nil {
		Missing(t, fmt.Sprintf("unshare -fp --mount-proc fails (%v: %s)", err, strings.TrimSpace(string(out))))
	}
	args := []string{"-fp", "--mount-proc", os.Args[0], "-test.run=^" + name + "$", "-test.count=1", "-test.v"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
	}
	cmd := exec.Command(unshare, args...)
	cmd.Env = append(os.Environ(), PidNamespaceEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a new pid namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("in a new pid namespace, %s did not pass:\n%s", name, out)
	}
	t.Logf("in a new pid namespace:\n%s", out)
}

// Reuser is an unrelated process (the test's own child) that holds a pid another process
// had, as its own process group, with every blockable signal blocked.
type Reuser struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// TakePid starts reusers until one gets pid, which must be free (its old owner reaped)
// or about to be. Only this test creates processes in its pid namespace: setting
// ns_last_pid to pid-1 makes the next fork get pid unless it is still taken, in which
// case the reuser is stopped and the next one tries again. The process is ended when t
// ends.
//
// It first waits for the kernel's clock to pass the tick it reads at entry: a process's
// identity is its pid and its start in clock ticks (10 ms), and the old owner started
// before TakePid was called, so the reuser never shares its start (a reuse within one
// tick cannot be told apart, which the tests state rather than hit by chance).
func TakePid(t *testing.T, pid int) *Reuser {
	t.Helper()
	for entry := bootTicks(t); bootTicks(t) <= entry+1; {
		time.Sleep(time.Millisecond) // a clock's tick to pass, not another process's step
	}
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
			t.Skipf("pid %d of was not free within 30 s (the last process started got %d): reuse could not be forced in this run", pid, got)
		}
	}
}

// startReuser starts a python3 that blocks every signal it can, becomes its own process
// group, says ready once the mask is set, and exits 0 at the end of its stdin.
func startReuser(t *testing.T) *Reuser {
	t.Helper()
	const prog = `import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.read()
`
	cmd := exec.Command("python3", "-c", prog)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	in, out := StartPiped(t, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the pid reuser did not start: %q, %v", line, err)
	}
	return &Reuser{cmd: cmd, stdin: in}
}

// Check fails t if the reuser got any signal: it is alive, not stopped, still its own
// group, and has nothing pending.
func (r *Reuser) Check(t *testing.T) {
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
			if strings.HasPrefix(v, "T") {
				t.Errorf("the unrelated process %d that reused the pid was stopped (state %s)", pid, v)
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
func (r *Reuser) stop(t *testing.T) {
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

// bootTicks is the time since boot in the clock ticks (1/100 s) of a process's start time
// in /proc/PID/stat, from /proc/uptime (the same boot-time clock, cut to 1/100 s).
func bootTicks(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	up, _, _ := strings.Cut(string(b), " ")
	sec, frac, _ := strings.Cut(up, ".")
	s, err1 := strconv.ParseUint(sec, 10, 64)
	c, err2 := strconv.ParseUint(frac, 10, 64)
	if err1 != nil || err2 != nil || len(frac) != 2 {
		t.Fatalf("/proc/uptime: %q", b)
	}
	return s*100 + c
}
