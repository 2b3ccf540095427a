package session

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/reaper"
)

// TestSessionProcsWaitsForAnExec: a process of the session that shows no environment
// when the table is first read (here: one started with an empty environment, read as
// not final until released — the window of a real exec cannot be held open — which then
// execs a program with PTYHUB_SESSION set) is read again and found, not taken for
// unmarked — or a sweep after the reaper's death would leave it running.
func TestSessionProcsWaitsForAnExec(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	const tag = "11111111-2222-4333-8444-sessionprocs"
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	python := testtool.Python(t) // the interpreter itself: a wrapper would give it an environment
	cmd := exec.Command(python, "-c", `import os, sys
open(sys.argv[1]).read()
os.execve(sys.argv[2], [sys.argv[2], "1000"], {sys.argv[3]: sys.argv[4]})`, fifo, sleep, reaper.EnvSession, tag)
	cmd.Env = []string{} // an empty environment: nothing to read until the exec
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	released := false
	lookupEnv = func(p int, key string) (string, bool, bool) {
		if p == pid && !released {
			return "", false, false // as inside an exec
		}
		return proc.LookupEnv(p, key)
	}
	t.Cleanup(func() { lookupEnv = proc.LookupEnv })
	rereadHook = func() {
		if released {
			return
		}
		released = true
		// Let the shell exec, and wait until the new program shows its marker.
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteString("\n")
		f.Close()
		deadline := time.Now().Add(time.Minute)
		for {
			if _, found, _ := proc.LookupEnv(pid, reaper.EnvSession); found || time.Now().After(deadline) {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	t.Cleanup(func() { rereadHook = nil })

	got := sessionProcs(map[string]regEntry{tag: {}})
	if !released {
		t.Fatal("the process without an environment was not read again")
	}
	if !slices.Contains(got, pid) {
		t.Errorf("process %d (%s), of the session once it exec'd, was not found: %v", pid, proc.CommandLine(pid), got)
	}
}

// TestSessionProcsLeavesServers: a per-user server a client started (a session leader
// marked PTYHUB_SERVER=1; here one that also carries the session's marker, as a forged
// or inherited one would) is not taken by the sweep after a reaper's death, nor is
// anything in its session or under it; a process that carries the marker beside it is.
func TestSessionProcsLeavesServers(t *testing.T) {
	const tag = "11111111-2222-4333-8444-sessionsrvrs"
	marked := append(os.Environ(), reaper.EnvSession+"="+tag)
	srv := exec.Command("sh", "-c", `sleep 1009 & echo $!; setsid sleep 1010 & echo $!; echo $$; wait`)
	srv.Env = append(marked, reaper.EnvServer+"=1")
	srv.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-srv.Process.Pid, syscall.SIGKILL); srv.Wait() })
	var under []int
	for range 3 {
		var pid int
		if _, err := fmt.Fscan(out, &pid); err != nil {
			t.Fatal(err)
		}
		under = append(under, pid)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	}
	plain := exec.Command("sleep", "1011")
	plain.Env = marked
	plain.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not in the test's session
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Process.Kill(); plain.Wait() })
	// Every process shows its own environment before the sweep reads it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		n := 0
		for _, pid := range append(under, plain.Process.Pid) {
			if v, _ := proc.Getenv(pid, reaper.EnvSession); v == tag {
				n++
			}
		}
		if n == len(under)+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the processes do not show their environment")
		}
	}

	got := sessionProcs(map[string]regEntry{tag: {}})
	if !slices.Contains(got, plain.Process.Pid) {
		t.Errorf("the marked process %d was not found: %v", plain.Process.Pid, got)
	}
	for _, pid := range under {
		if slices.Contains(got, pid) {
			t.Errorf("process %d (%s), the server's or under it, was taken: %v", pid, proc.CommandLine(pid), got)
		}
	}
}

// sessionProcs is one round of a procSweep of sessions (see find), as pids.
func sessionProcs(sessions map[string]regEntry) []int {
	var pids []int
	for _, r := range newProcSweep(sessions).find() {
		pids = append(pids, r.PID)
	}
	return pids
}
