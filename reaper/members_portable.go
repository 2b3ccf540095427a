//go:build (linux && ptyhub_portable) || darwin || freebsd

package reaper

import (
	"sync"

	"github.com/ptyhub/ptyhub/proc"
)

// markerCache remembers each process incarnation's PTYHUB_SESSION entry (as read at
// exec), so a table scan reads the environment only of processes it has not seen (or
// could not read): a sweep runs several scans, and every exit starts one.
var markerCache struct {
	sync.Mutex
	m map[markerKey]string // "" when the process has none
}

type markerKey struct {
	pid   int
	start uint64
}

// markersOf returns the PTYHUB_SESSION entry of every live process in table, and forgets
// processes no longer in it.
func markersOf(table []proc.Info) map[int]string {
	markerCache.Lock()
	defer markerCache.Unlock()
	old := markerCache.m
	next := make(map[markerKey]string, len(table))
	out := make(map[int]string, len(table))
	for _, p := range table {
		if p.Dead() {
			continue
		}
		k := markerKey{p.PID, p.Start}
		v, ok := old[k]
		if !ok {
			var read bool
			v, _, read = proc.LookupEnv(p.PID, EnvSession)
			// A process caught between fork and exec, or inside an exec, shows no
			// environment for a moment: it is read again at the next scan instead of
			// being remembered as unmarked, or a setsid escaper seen then would never be
			// found by its marker once re-parented to init.
			ok = read
		}
		if ok {
			next[k] = v
		}
		if v != "" {
			out[p.PID] = v
		}
	}
	markerCache.m = next
	return out
}

// sessionMembers returns the live processes of the session tagged tag, under the reaper
// self, without a subreaper: orphans re-parent to init, so it reads the whole process
// table once and takes the leader's subtree (while the leader is alive), every process
// whose session id is a leader's of that session (sidOf), every process whose
// environment carries PTYHUB_SESSION=tag, and every process that shares its session id
// with one found by its environment (every member of a session descends from the process
// that made it with setsid, so a session holding one of ours is ours: a process whose
// environment cannot be read — not dumpable — is found so beside a marked one; only one
// we may signal, never another user's), each with its subtree. With tag "", every descendant of the reaper and every process of a session
// known reports as its own. spawner, liveLeader and others are unused here: without a
// subreaper an orphan that nothing names cannot be told from another program of the
// user's. It costs O(machine): one table read, plus one environment read per process not
// seen by an earlier scan.
//
// The walk leaves out a ptyhub server a client started (IsServer; only the environment
// of a session leader the walk reaches is read) and its whole subtree, with any rule and
// with tag "": a per-user server autostarted by a command of the session is the user's,
// and its sessions are its own (see EnvServer). Its own processes carry no marker of
// this session, so no other rule reaches under it.
//
// What escapes it: a process that left the session with setsid, once its parent chain
// to the session is broken, when nothing in its new session carries the marker: its
// environment has none (env -i, or a program that rewrote it before exec) or cannot be
// read (not dumpable: ssh-agent, a setuid program, an exec of an unreadable binary).
func sessionMembers(self, spawner int, tag string, leaderPid int, leaderAlive bool, liveLeader func(int) bool, sidOf func(int) (string, bool), known func(string) bool, others func() uint64) []proc.Info {
	table := proc.List()
	byParent := make(map[int][]int, len(table))
	byPid := make(map[int]proc.Info, len(table))
	for _, p := range table {
		byParent[p.PPID] = append(byParent[p.PPID], p.PID)
		byPid[p.PID] = p
	}
	mine := func(t string) bool {
		if tag == "" {
			return known != nil && known(t)
		}
		return t == tag
	}
	markers := markersOf(table)
	var roots []int
	if tag == "" {
		roots = append(roots, byParent[self]...)
	} else if leaderAlive {
		roots = append(roots, leaderPid)
	}
	marked := map[int]bool{} // session ids holding a process marked as ours
	for _, p := range table {
		if p.Dead() || p.PID == self || p.PID <= 1 {
			continue
		}
		if t, ok := sidOf(p.Sid); ok && mine(t) {
			roots = append(roots, p.PID)
			continue
		}
		if v, ok := markers[p.PID]; ok && mine(v) {
			roots = append(roots, p.PID)
			marked[p.Sid] = true
		}
	}
	for _, p := range table {
		if marked[p.Sid] && p.Sid > 1 && !p.Dead() && p.PID != self && p.PID > 1 && proc.Signalable(p.PID) {
			roots = append(roots, p.PID)
		}
	}
	var out []proc.Info
	seen := map[int]bool{}
	for len(roots) > 0 {
		pid := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if seen[pid] || pid == self {
			continue
		}
		seen[pid] = true
		if p, ok := byPid[pid]; ok && !p.Dead() {
			if pid != leaderPid && IsServer(p) {
				continue // a per-user server and its subtree are the user's (see EnvServer)
			}
			out = append(out, p)
		}
		roots = append(roots, byParent[pid]...)
	}
	return out
}
