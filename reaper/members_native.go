//go:build linux && !ptyhub_portable

package reaper

import (
	"math"
	"time"

	"github.com/ptyhub/ptyhub/proc"
)

// sessionMembers returns the live processes of the session tagged tag, under the reaper
// self: the leader's subtree (while the leader is alive), and orphans re-parented to the
// reaper (with their subtrees) that are the session's. With tag "", every descendant of
// the reaper. spawner is the reaper's thread that forks the leaders (0: unknown), so
// orphans are found without listing every leader (see orphanCandidates). liveLeader
// says whether a pid is a leader not yet reaped (of any session), sidOf maps a leader pid
// (a session id) to its tag; known is unused here (orphans are the reaper's children).
// It walks /proc/PID/task/*/children, so it costs O(session), not O(machine).
//
// An orphan is the session's when, in this order:
//   - its session id is the leader's (sidOf), or its environment carries
//     PTYHUB_SESSION=tag;
//   - it shares its session id with an orphan found so (every member of a session
//     descends from the process that made it with setsid, so a session holding one of
//     ours is ours);
//   - nothing names it (its environment is unreadable: not dumpable — ssh-agent, a
//     setuid program, an exec of a binary it cannot read — or has no entry: env -i),
//     and no other running session could have started it: it started before others(),
//     the earliest start of the live leaders of the other sessions (called at most
//     once, only then). Every process under the subreaper descends from a leader the
//     reaper forked, so such an orphan is this session's or one of a session that has
//     ended. A leader whose session is ending (exited, or reaped) claims nothing, so of
//     two sessions ending together both may take it. An orphan that a running session
//     may own (its leader started at or before the orphan, in the start time's clock
//     ticks) is left alone: the sweep of the last of its possible owners to end takes
//     it.
//
// An orphan taken by the last two rules is one we may signal (proc.Signalable): never
// another user's, which no kill could end.
//
// The walk leaves out a ptyhub server a client started (IsServer; it leads its own
// session, so only session leaders' environments are read) and its whole subtree, with
// any rule and with tag "": a per-user server autostarted by a command of the session is
// the user's, and its sessions are its own (see EnvServer).
func sessionMembers(self, spawner int, tag string, leaderPid int, leaderAlive bool, liveLeader func(int) bool, sidOf func(int) (string, bool), known func(string) bool, others func() uint64) []proc.Info {
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
	var unnamed []proc.Info                        // orphans nothing attributes yet
	ours, theirs := map[int]bool{}, map[int]bool{} // session ids of attributed orphans
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
			if v, found := markerOf(c); found {
				owner, ok = v, true
			}
		}
		switch {
		case !ok:
			unnamed = append(unnamed, p)
		case owner == tag:
			roots = append(roots, c)
			ours[p.Sid] = true
		default:
			theirs[p.Sid] = true
		}
	}
	earliest := uint64(0) // of the other sessions' leaders; 0: not read yet
	for _, p := range unnamed {
		switch {
		case theirs[p.Sid] || !proc.Signalable(p.PID):
			continue
		case ours[p.Sid]:
		case p.Start == 0:
			continue
		default:
			if earliest == 0 {
				earliest = math.MaxUint64
				if others != nil {
					earliest = max(others(), 1)
				}
			}
			if p.Start >= earliest {
				continue // a running session may have started it
			}
		}
		roots = append(roots, p.PID)
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
			if pid != leaderPid && IsServer(p) {
				continue // a per-user server and its subtree are the user's (see EnvServer)
			}
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
// gone, or a hundred tries passed. A process whose environment cannot be read (not
// dumpable, another user's) or is really empty (`env -i`: proc.LookupEnv tells it from
// one inside an exec) is read once.
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
