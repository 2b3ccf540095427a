package session

import (
	"slices"
	"time"

	"github.com/ptyhub/ptyhub/proc"
)

// Facts about a running session's processes for the listing: what they listen on and
// what they cost, read through package proc.

// procFacts describes the processes of one session.
type procFacts struct {
	cpu   time.Duration // user + system time of the live processes
	rss   int64         // resident memory of the live processes, bytes
	ports []int         // TCP ports they listen on, sorted, no duplicates
}

// members lists the live processes of s: its leader and every other process of the
// session the reaper would end with it (background jobs, setsid escapers).
func (s *Session) members() []int {
	if s.isExited() || s.pid <= 0 {
		return nil
	}
	pids := proc.Descendants(s.pid, 256)
	if s.rp.Load() != nil {
		// Orphans the reaper adopted (daemons, jobs of a shell that exited).
		for _, p := range s.rp.Load().Survivors(s.uuid) {
			if !slices.Contains(pids, p.PID) {
				pids = append(pids, p.PID)
			}
		}
	}
	return pids
}

// facts gathers procFacts of s; socks maps a listening socket's inode to its port (see
// proc.ListeningSockets), read once per listing.
func (s *Session) facts(socks proc.Sockets) procFacts {
	pids := s.members()
	if len(pids) == 0 {
		return procFacts{}
	}
	var f procFacts
	f.cpu, f.rss = proc.Usage(pids)
	f.ports = proc.Ports(pids, socks)
	return f
}

// addFacts fills the listing's facts of s: its processes' ports, CPU and memory, the
// time since its last output, and whether it waits for input.
func (s *Session) addFacts(info *Info, socks proc.Sockets, now time.Time) {
	var quiet time.Duration
	if last := s.lastOutputAt(); !last.IsZero() {
		quiet = now.Sub(last)
		ms := quiet.Milliseconds()
		info.LastOutputAgoMs = &ms
	} else {
		quiet = now.Sub(s.started)
	}
	if s.isExited() {
		return
	}
	f := s.facts(socks)
	info.Ports, info.CPUMs, info.RSSBytes = f.ports, f.cpu.Milliseconds(), f.rss
	if s.tty {
		if a, err := s.master.Attrs(); err == nil {
			info.PasswordPrompt = !a.Echo && a.Canonical
		}
	}
	if s.tty && waitDetectionAvailable {
		v, _ := s.lookWaiting(quiet)
		info.WaitingForInput = v == waitYes
	}
}
