//go:build linux && !ptyhub_portable

package reaper

import (
	"time"

	"github.com/ptyhub/ptyhub/proc"
)

// sessionMembers returns the live processes of the session tagged tag, under the reaper
// self: the leader's subtree (while the leader is alive), and orphans re-parented to the
// reaper (with their subtrees) whose session id is the leader's or whose environment
// carries PTYHUB_SESSION=tag. With tag "", every descendant of the reaper. spawner is the
// reaper's thread that forks the leaders (0: unknown), so orphans are found without
// listing every leader (see orphanCandidates). liveLeader
// says whether a pid is a leader not yet reaped (of any session), sidOf maps a leader pid
// (a session id) to its tag; known is unused here (orphans are the reaper's children). It
// walks /proc/PID/task/*/children, so it costs O(session), not O(machine).
func sessionMembers(self, spawner int, tag string, leaderPid int, leaderAlive bool, liveLeader func(int) bool, sidOf func(int) (string, bool), known func(string) bool) []proc.Info {
	var tree proc.Tree
	var r proc.Reader
	var roots []int
	if tag != "" && leaderAlive {
		roots = append(roots, leaderPid)
	}
	var kids []int
	ok := false
	if tag != "" {
		kids, ok = orphanCandidates(self, spawner)
	}
	if !ok {
		kids = tree.Children(self)
	}
	for _, c := range kids {
		if tag == "" {
			roots = append(roots, c)
			continue
		}
		if liveLeader(c) {
			continue // a leader: its own session (ours is already a root)
		}
		p, ok := r.Stat(c)
		if !ok || p.Dead() {
			continue
		}
		owner, ok := sidOf(p.Sid)
		if !ok {
			if v, found := markerOf(c); found && v == tag {
				owner, ok = tag, true
			}
		}
		if ok && owner == tag {
			roots = append(roots, c)
		}
	}
	var out []proc.Info
	seen := map[int]bool{}
	for len(roots) > 0 {
		pid := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if p, ok := r.Stat(pid); ok && !p.Dead() {
			out = append(out, p)
		}
		roots = append(roots, tree.Children(pid)...)
	}
	return out
}

// markerOf returns pid's PTYHUB_SESSION entry. A process in the middle of an exec shows
// no environment for a moment (the new image's is set up last, after the program and its
// interpreter are mapped), and an orphan taken then for unmarked would be left out of
// its session's kill: it is read again, every millisecond, until it shows one, it is
// gone, or a hundred tries passed (a process whose environment really is empty).
func markerOf(pid int) (string, bool) {
	for try := 0; ; try++ {
		v, ok, read := proc.LookupEnv(pid, EnvSession)
		if read || try == 100 {
			return v, ok
		}
		if p, err := proc.Stat(pid); err != nil || p.Dead() {
			return "", false
		}
		time.Sleep(time.Millisecond)
	}
}
