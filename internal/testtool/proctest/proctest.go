// Package proctest finds the processes a test started, through package proc (so that the
// tests, like the code, read the process table in one place). It is a package of its own
// because proc's tests import testtool.
package proctest

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/proc"
)

// WithEnv lists the live (not exited) processes whose environment holds the entry kv
// ("KEY=value"), as it was at their exec: how the end-to-end tests find what a session or
// a test started.
func WithEnv(kv string) []int {
	key, val, _ := strings.Cut(kv, "=")
	var pids []int
	for _, p := range proc.List() {
		if p.Dead() {
			continue
		}
		if v, ok := proc.Getenv(p.PID, key); ok && v == val {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// Exited reports whether pid has exited: it is a zombie, or gone.
func Exited(pid int) bool {
	in, err := proc.Stat(pid)
	return err != nil || in.Dead()
}

// WaitExited polls until every one of pids has exited (Exited); the limit, 30 s, only
// bounds a failing test, which it fails naming each process left: "process P (its
// command line, state, parent, group, session) what".
func WaitExited(t testing.TB, pids []int, what string) {
	t.Helper()
	var left []int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		for _, pid := range pids {
			if !Exited(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	var desc []string
	for _, pid := range left {
		if p, err := proc.Stat(pid); err == nil {
			desc = append(desc, fmt.Sprintf("process %d (%q, state %c, ppid %d, pgid %d, sid %d) %s", pid, proc.CommandLine(pid), p.State, p.PPID, p.Pgid, p.Sid, what))
		}
	}
	if len(desc) > 0 {
		t.Fatal(strings.Join(desc, "; "))
	}
}

// KillReaperOf sends SIGKILL to the reaper helper that is leader's parent and returns
// its pid; it fails the test when leader's parent is not a reaper.
func KillReaperOf(t testing.TB, leader int) int {
	t.Helper()
	st, err := proc.Stat(leader)
	if err != nil {
		t.Fatal(err)
	}
	if !IsReaper(st.PPID) {
		t.Fatalf("the leader's parent %d is %q, not the reaper", st.PPID, proc.CommandLine(st.PPID))
	}
	if err := syscall.Kill(st.PPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return st.PPID
}

// Reaper returns the pid of the reaper helper among the children of pid (a server's or
// an agent's), 0 when it has none.
func Reaper(pid int) int {
	reaper := 0
	for _, c := range proc.Children(pid) {
		if IsReaper(c) {
			reaper = c
		}
	}
	return reaper
}

// IsReaper reports whether pid is a reaper helper (its command line starts with
// "ptyhub-reaper").
func IsReaper(pid int) bool { return strings.HasPrefix(proc.CommandLine(pid), "ptyhub-reaper") }
