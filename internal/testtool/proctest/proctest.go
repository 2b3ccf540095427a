// Package proctest finds the processes a test started, through package proc (so that the
// tests, like the code, read the process table in one place). It is a package of its own
// because proc's tests import testtool.
package proctest

import (
	"strings"

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
