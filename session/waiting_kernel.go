package session

import (
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/pty"
)

// The waiting-for-input detector from the kernel's view of the terminal's foreground
// process group, where proc.SyscallView (Linux without the ptyhub_portable tag); proc
// reads the view, this file decides. What programs block in, measured on Linux 6.18:
//
//	cat, read -p, read -s, less, getpass   read(2) on the tty (fd 0, or fd 3 = /dev/tty)
//	bash -i, python3 -q (GNU readline)     pselect6(1, {0}, …): fd 0 only
//	node (libuv)                           epoll_pwait on an epoll set holding fd 0
//	sleep / bash waiting on a child        nanosleep / wait4
//	cat reading a pipe, a socket reader    read(2) on a pipe or socket
//
// The detector says "waiting" when, in this order:
//  0. (cheap, first) output has settled — see 3; while output streams, nothing else is
//     looked at, so a flood pays one poll(2) per look;
//  1. no thread of any process of the foreground group is running, in disk sleep or
//     stopped (/proc/PID/task/TID/stat; the leader's from /proc/PID/stat, read for the
//     process anyway), and at least one is blocked reading the terminal
//     (/proc/PID/task/TID/syscall: read/readv on a tty fd, or select/poll/epoll whose
//     interest set holds the tty; the fd is recognised by its device number);
//  2. the terminal has no input that reader would take now: poll(2) on a copy of its
//     very fd (pidfd_getfd) — the kernel flushes pending input buffer work first, so
//     bytes just written are seen even before the program was woken;
//  3. step 1 again: a reader that took the input just before step 2 is running now, or
//     it has answered and blocked again;
//  4. output has settled: poll(2) on the master finds nothing unread (again after a
//     flush), the session's reader goroutine holds no bytes (pty.Master.ReadHold), and
//     the agent cursor is at the end of the hub.
//
// When the kernel cannot tell — the tty is waited on together with a socket (ssh, nc), or
// /proc or the fd is not readable (a setuid program) — the verdict is waitMaybe and the
// caller requires the output to have been quiet for waitQuiet.
//
// /proc/PID/syscall, /proc/PID/mem and pidfd_getfd need ptrace access to the program:
// the server is its ancestor (through the reaper), which Yama's ptrace_scope 1 allows.

// timedWait is a thread seen in a short timed wait on the terminal.
type timedWait struct {
	run uint64 // its CPU time (schedstat), ns
	end int64  // the end of the output then
}

// ttyReader is a thread found blocked reading the terminal.
type ttyReader struct {
	pid, fd int
}

// probeKernel looks once at the foreground process group of s's terminal, output having
// been quiet for quiet. It must be called with collectMu held (it compares the agent
// cursor with the hub). Through proc it reads a few kernel facts per process and thread
// of the foreground group, and it makes a few syscalls; it changes nothing.
func (s *Session) probeKernel(quiet time.Duration) (waitVerdict, string) {
	if !s.tty || s.isExited() {
		return waitNo, ""
	}
	w := &s.wait
	w.quiet, w.end = quiet, s.hub.End()
	if w.dev == 0 && !w.devErr {
		d, err := s.master.PeerDevice()
		w.dev, w.devErr = d, err != nil
	}
	// Cheap first: while output is still coming (a flood), skip the /proc walk. The
	// exact check of the same facts comes last, after the threads were seen blocked.
	if !s.outputSettled() {
		return waitNo, ""
	}
	pgrp, err := s.master.ForegroundPgrp()
	if err != nil || pgrp <= 0 {
		return waitUnsure, ""
	}
	sc := s.scanForeground(pgrp)
	if sc.busy || !sc.found && !sc.maybe {
		return waitNo, ""
	}
	if sc.found {
		// Has the reader taken what was typed? poll(2) on its own fd says whether a read
		// would return now, after flushing what the kernel has not delivered yet.
		pending, ok := ttyInputPending(&w.pr, sc.reader.pid, sc.reader.fd)
		if !ok {
			pending, ok = slaveInputPending(s.master)
		}
		if ok && pending {
			return waitNo, ""
		}
		if !ok {
			sc.maybe = true
		}
		// Look again: the reader may have taken the input just before the poll and not
		// yet answered. Blocked again now, it has answered (or waits for more).
		again := s.scanForeground(pgrp)
		if again.busy || !again.found && !again.maybe {
			return waitNo, ""
		}
		again.maybe = again.maybe || sc.maybe
		sc = again
	}
	// Output settled: nothing unread at the master (flushed first), nothing held by the
	// reader goroutine, nothing unread in the hub. Checked after the threads, which were
	// blocked, so everything they printed before is covered.
	if !s.outputSettled() {
		return waitNo, ""
	}
	if sc.maybe {
		// Some thread's wait is unknown (perhaps besides a tty reader): the kernel alone
		// does not settle it.
		return waitMaybe, methodQuiet
	}
	return waitYes, sc.method
}

// fgScan is one pass over the threads of the foreground process group.
type fgScan struct {
	busy   bool      // some thread runs, is in disk sleep or stopped
	found  bool      // some thread is blocked reading the terminal: reader
	reader ttyReader // the first such thread's process and terminal fd
	maybe  bool      // some thread's wait could not be told
	method string    // methodRead, or methodPoll if a reader waits in select/poll/epoll
}

// scanForeground examines every thread of every process of group pgrp. It stops at the
// first busy thread. It uses the detector's cache, s.wait (collectMu held).
func (s *Session) scanForeground(pgrp int) fgScan { return s.scanForegroundIn(&s.wait, pgrp) }

// readerAheadKernel reports whether the terminal's foreground group is not reading the
// terminal now: it runs, or sleeps on something else (a child, a timer, a pipe), or no
// program has taken the terminal yet. Unknown waits count as reading, and so do timed
// waits and waits beside a working child (input typed then is read when they end). It
// uses w, which its caller owns.
func (s *Session) readerAheadKernel(w *waitState) bool {
	w.anyRead = true
	if w.dev == 0 && !w.devErr {
		d, err := s.master.PeerDevice()
		w.dev, w.devErr = d, err != nil
	}
	pgrp, err := s.master.ForegroundPgrp()
	if err != nil || pgrp <= 0 {
		return true // the program has not taken the terminal yet
	}
	sc := s.scanForegroundIn(w, pgrp)
	return sc.busy || !sc.found && !sc.maybe
}

func (s *Session) scanForegroundIn(w *waitState, pgrp int) (sc fgScan) {
	sc.method = methodRead
	examined, sawLeader := 0, false
	// check examines every thread of process pid, whose stat was just read as info;
	// false means busy. The leader thread's state is info's (proc.Reader.ThreadState).
	check := func(pid int, info proc.Info) bool {
		examined++
		for _, tid := range w.pr.Tasks(pid, info.Threads) {
			st, ok := info.State, true
			if tid != pid {
				st, ok = w.pr.ThreadState(pid, tid)
			}
			if !ok {
				continue // gone
			}
			switch st {
			case 'S', 'I':
			case 'Z', 'X':
				continue
			default: // R, D, T, t, W, P: running, disk sleep, stopped, traced
				w.runPid, w.runTid = pid, tid
				return false
			}
			k, fd := w.classify(pid, tid)
			switch k {
			case blockBusy, blockTimed, blockChild:
				return false // runs, or waits for something that will happen by itself
			case blockTTYRead, blockTTYPoll:
				if !sc.found {
					sc.reader, sc.found = ttyReader{pid, fd}, true
				}
				if k == blockTTYPoll {
					sc.method = methodPoll
				}
			case blockUnknown:
				sc.maybe = true
			}
		}
		return true
	}
	// Walk the session's tree from its leader; the foreground group is almost always in
	// it. Its group leader is examined too, in case it escaped the tree.
	w.visited = append(w.visited[:0], s.pid)
	for i := 0; i < len(w.visited) && i < maxWaitProcs; i++ {
		pid := w.visited[i]
		st, ok := w.pr.Stat(pid)
		if !ok {
			continue
		}
		if st.Pgid == pgrp {
			sawLeader = sawLeader || pid == pgrp
			if !st.Dead() && !check(pid, st) {
				return fgScan{busy: true}
			}
		}
		w.visited = w.pr.AppendChildren(w.visited, pid, st.Threads)
	}
	if !sawLeader {
		if st, ok := w.pr.Stat(pgrp); ok && st.Pgid == pgrp && !st.Dead() {
			if !check(pgrp, st) {
				return fgScan{busy: true}
			}
		}
	}
	if examined == 0 {
		return fgScan{}
	}
	return sc
}

// blockKind is what a sleeping thread waits for.
type blockKind uint8

const (
	blockOther   blockKind = iota // something else: a child, a timer, a pipe, a socket
	blockTTYRead                  // read(2)/readv(2) on the terminal
	blockTTYPoll                  // select/poll/epoll on the terminal among internal fds
	blockUnknown                  // cannot tell (unreadable, or the tty among sockets)
	blockBusy                     // the thread is running after all
	blockTimed                    // a short timed wait that involves the terminal: it ends by itself
	blockChild                    // the terminal waited on with a pipe or pty of a child that works
)

// timedWaitMax is the longest timeout of a wait on the terminal that is taken to end by
// itself (a timer, an escape-sequence timeout, a query's answer): the program is not
// waiting for the agent until the wait has ended with the program still blocked. Longer
// timeouts are a prompt's periodic wake (vim's 'updatetime' is 4 s). Measured: vim's
// escape timeout 100 ms and DECRQM wait 100 ms, node's exit timer ~15 ms, a wizard's
// async step (setTimeout) 1.5 s.
const timedWaitMax = 3 * time.Second

// classify decides what thread tid of process pid waits for, from what the kernel says
// it is blocked in (proc.Reader.ThreadBlocked). fd is the terminal fd for blockTTYRead
// and blockTTYPoll.
func (w *waitState) classify(pid, tid int) (blockKind, int) {
	b := w.pr.ThreadBlocked(pid, tid)
	switch b.Call {
	case proc.CallRunning:
		return blockBusy, 0
	case proc.CallUnknown:
		return blockUnknown, 0
	case proc.CallRead:
		switch w.fdKind(pid, b.FD) {
		case fdTTY:
			return blockTTYRead, b.FD
		case fdUnknown:
			return blockUnknown, 0
		}
		return blockOther, 0
	case proc.CallMultiplex:
		return w.withTimeout(tid, b.Timeout, w.pollSet)(pid, b.FDs)
	}
	return blockOther, 0
}

// withTimeout wraps the classification of a multiplexed wait with its timeout: a wait on
// the terminal with a timeout of at most timedWaitMax will end by itself and is
// blockTimed, until it has ended with the program still blocked and silent: the thread
// was seen in such a wait with no output since, it has run since (its CPU time moved),
// and output has been quiet for longer than the timeout. Then it is a prompt that wakes
// now and then, and the wait is what classify says. The CPU time tells a wait that ended
// from one whose timer fired but whose thread has not run yet (on a loaded machine).
func (w *waitState) withTimeout(tid int, timeout time.Duration, classify func(int, []int) (blockKind, int)) func(int, []int) (blockKind, int) {
	return func(pid int, fds []int) (blockKind, int) {
		k, fd := classify(pid, fds)
		if w.anyRead || (k != blockTTYPoll && k != blockUnknown) || timeout < 0 || timeout > timedWaitMax {
			return k, fd
		}
		run, ok := w.pr.ThreadRuntime(pid, tid)
		if !ok {
			return blockTimed, 0
		}
		if w.timed == nil {
			w.timed = map[int]timedWait{}
		}
		last, seen := w.timed[tid]
		if seen && w.end == last.end { // no output since it was seen
			if last.run != run && w.quiet > timeout {
				return k, fd
			}
			return blockTimed, 0
		}
		if len(w.timed) >= maxWaitProcs {
			clear(w.timed)
		}
		w.timed[tid] = timedWait{run, w.end}
		return blockTimed, 0
	}
}

// pollSet classifies a wait on several fds: the terminal among internal fds (eventfds,
// timers, pipes) is waiting for the terminal; the terminal among sockets cannot be told
// apart from waiting on the network. The terminal waited on with a pipe or a pty master
// whose other end a working descendant holds (apt relaying dpkg's terminal and status
// pipe) is waiting for the child, unless that child itself waits to read its terminal
// (see childWorks).
func (w *waitState) pollSet(pid int, fds []int) (blockKind, int) {
	tty, other, child := -1, false, false
	for _, fd := range fds {
		switch w.fdKind(pid, fd) {
		case fdTTY:
			if tty < 0 {
				tty = fd
			}
		case fdSocket, fdUnknown:
			other = true
		case fdPipe, fdPtmx:
			child = true
		}
	}
	switch {
	case tty < 0:
		return blockOther, 0
	case other:
		return blockUnknown, 0
	case child && !w.anyRead && w.childWorks(pid, fds):
		return blockChild, 0
	}
	return blockTTYPoll, tty
}

type fdKindT uint8

const (
	fdOther fdKindT = iota
	fdTTY
	fdSocket
	fdUnknown
	fdPipe // a pipe (or FIFO)
	fdPtmx // the master side of a pseudo-terminal
)

// fdKind says whether fd of process pid is the session's terminal (its /dev/pts/N, or
// /dev/tty, which is the controlling terminal of every process of the session).
func (w *waitState) fdKind(pid, fd int) fdKindT {
	f := w.pr.FD(pid, fd)
	switch f.Kind {
	case proc.FDUnknown:
		return fdUnknown
	case proc.FDDevTTY:
		return fdTTY
	case proc.FDCharDev:
		if w.dev != 0 && f.Rdev == w.dev {
			return fdTTY
		}
	case proc.FDPtmx:
		return fdPtmx
	case proc.FDSocket:
		return fdSocket
	case proc.FDPipe:
		return fdPipe
	}
	return fdOther
}

// childIdle is how long the descendants holding the other ends of a poller's pipes and
// ptys must have used no CPU, with none of them running, to count as idle.
const childIdle = 200 * time.Millisecond

// childWorks reports whether the pipes and pty masters among fds, which process pid
// waits on with the terminal, lead to a descendant of pid that works: one that holds the
// other end (the same pipe, or the slave of the pty) and whose subtree runs, waits on
// disk, or used CPU time within childIdle. A holder blocked reading one of those ptys is
// a relayed prompt (dpkg asking about a configuration file through apt): not working.
// It walks at most maxWaitProcs descendants and lists the fds of each; it keeps the
// holders' CPU time in w between looks.
func (w *waitState) childWorks(pid int, fds []int) bool {
	type end struct{ dev, ino uint64 }
	var pipes []end    // the pipes in the set
	var inner []uint64 // the slaves of the pty masters in the set
	for _, fd := range fds {
		switch f := w.pr.FD(pid, fd); f.Kind {
		case proc.FDPipe:
			pipes = append(pipes, end{f.Dev, f.Ino})
		case proc.FDPtmx:
			if dev, ok := w.pr.PtyPeer(pid, fd); ok {
				inner = append(inner, dev)
			}
		}
	}
	holds := func(kid int) bool {
		open, ok := w.pr.FDs(kid)
		if !ok {
			return true // cannot tell: count it as a holder
		}
		for _, f := range open {
			switch f.Kind {
			case proc.FDPipe:
				if slices.Contains(pipes, end{f.Dev, f.Ino}) {
					return true
				}
			case proc.FDDevTTY, proc.FDPtmx, proc.FDCharDev:
				if slices.Contains(inner, f.Rdev) {
					return true
				}
			}
		}
		return false
	}
	// A view of the detector in which the inner terminals are the terminal.
	sub := &waitState{}
	var cpu uint64
	held := false // some live descendant holds an end; from then on its subtree counts
	w.kids = w.pr.AppendChildren(w.kids[:0], pid, 0)
	for i := 0; i < len(w.kids) && i < maxWaitProcs; i++ {
		kid := w.kids[i]
		st, ok := w.pr.Stat(kid)
		if !ok || st.Dead() {
			continue
		}
		if !held && !holds(kid) {
			w.kids = w.pr.AppendChildren(w.kids, kid, st.Threads)
			continue
		}
		held = true
		cpu += st.CPU
		for _, tid := range w.pr.Tasks(kid, st.Threads) {
			ts, ok := w.pr.ThreadState(kid, tid)
			if !ok {
				continue
			}
			switch ts {
			case 'S', 'I':
			case 'Z', 'X':
				continue
			default:
				w.childSet = false
				return true // runs
			}
			for _, dev := range inner {
				sub.dev = dev
				if k, _ := sub.classify(kid, tid); k == blockTTYRead || k == blockTTYPoll || k == blockTimed {
					w.childSet = false
					return false // a relayed prompt
				}
			}
		}
		w.kids = w.pr.AppendChildren(w.kids, kid, st.Threads)
	}
	if !held {
		w.childSet = false
		return false // the pipes lead elsewhere
	}
	now := time.Now()
	if !w.childSet || w.childPid != pid || w.childCPU != cpu {
		w.childSet, w.childPid, w.childCPU, w.childSince = true, pid, cpu, now
		return true
	}
	return now.Sub(w.childSince) < childIdle
}

// ttyInputPending asks, through a copy of process pid's own terminal fd (pidfd_getfd,
// through pr), whether a read would return data now. ok is false when the copy cannot be
// had. The copy is closed before it returns: a copy of the terminal kept open would
// keep its end of the pty open after the program is gone.
func ttyInputPending(pr *proc.Reader, pid, fd int) (pending, ok bool) {
	dup, err := pr.DupFD(pid, fd)
	if err != nil {
		return false, false
	}
	defer unix.Close(dup)
	p, err := pty.PollIn(dup)
	return p, err == nil
}
