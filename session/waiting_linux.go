//go:build linux && !ptyhub_portable

package session

import (
	"bytes"
	"encoding/binary"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/pty"
)

// The waiting-for-input detector, from the kernel's view of the
// terminal's foreground process group. What programs block in, measured on Linux 6.18:
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
//     stopped (/proc/PID/task/TID/stat), and at least one is blocked reading the terminal
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

// waitState caches facts about the session's terminal for the detector. It is used only
// under collectMu.
type waitState struct {
	dev     uint64 // st_rdev of /dev/pts/N; 0 until known
	devErr  bool   // PeerDevice failed: recognise the tty by /dev/tty only
	buf     []byte // scratch for /proc reads
	pr      proc.Reader
	visited []int // scratch for the process walk
	kids    []int // scratch for the walk of a poller's descendants
	// The CPU time of the descendants holding the other ends of poller childPid's pipes
	// and ptys, unchanged since childSince (see childWorks); childSet says it is taken.
	childSet   bool
	childPid   int
	childCPU   uint64
	childSince time.Time
	// timed holds, for each thread seen in a short timed wait on the terminal since
	// output last arrived, its CPU time then (see withTimeout).
	timed map[int]timedWait
	// quiet is how long output has been quiet at the current look, and end the end of
	// the output then (set by probeWait).
	quiet time.Duration
	end   int64
	// anyRead: a wait that involves the terminal counts as reading it even when it is
	// timed or beside a working child (the typeahead view, readerAhead: input typed then
	// will be read when the wait ends).
	anyRead bool
}

// timedWait is a thread seen in a short timed wait on the terminal.
type timedWait struct {
	run uint64 // its CPU time (schedstat), ns
	end int64  // the end of the output then
}

// Detection methods reported in Result.WaitDetection.
const (
	methodRead  = "tty_read"
	methodPoll  = "tty_poll"
	methodQuiet = "quiet"
)

// waitDetectionAvailable says whether this platform has the kernel-based detector.
const waitDetectionAvailable = true

// maxWaitProcs bounds the processes one look examines (a huge foreground pipeline is not
// waiting at a prompt; it is not worth a long /proc walk either).
const maxWaitProcs = 256

var devTTY = unix.Mkdev(5, 0)

// ttyReader is a thread found blocked reading the terminal.
type ttyReader struct {
	pid, fd int
}

// probeWait looks once at the foreground process group of s's terminal, output having
// been quiet for quiet. It must be called
// with collectMu held (it compares the agent cursor with the hub). It reads a few /proc
// files per process and thread of the foreground group and makes a few syscalls; it
// changes nothing.
func (s *Session) probeWait(quiet time.Duration) (waitVerdict, string) {
	if !s.tty || s.isExited() {
		return waitNo, ""
	}
	w := &s.wait
	w.quiet, w.end = quiet, s.hub.End()
	if w.buf == nil {
		w.buf = make([]byte, 4096)
	}
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
		pending, ok := ttyInputPending(sc.reader.pid, sc.reader.fd)
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

// outputSettled reports whether every byte the program printed is in the hub and read
// by the agent cursor: nothing unread at the master (poll flushes the kernel's pending
// buffer work first), nothing held by the reader goroutine, nothing unread in the hub.
// The order matters: see pty.Master.ReadHold. Called with collectMu held.
func (s *Session) outputSettled() bool {
	if pending, err := s.master.OutputPending(); err != nil || pending {
		return false
	}
	return !s.readHeld.Load() && (s.settledAnyCursor || s.hub.End() == s.cursor)
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

// readerAhead reports whether the terminal's foreground group is not reading the
// terminal now: it runs, or sleeps on something else (a child, a timer, a pipe), or no
// program has taken the terminal yet. Unknown waits count as reading, and so do timed
// waits and waits beside a working child (input typed then is read when they end). It
// uses w, which its caller owns.
func (s *Session) readerAhead(w *waitState) bool {
	w.anyRead = true
	if w.buf == nil {
		w.buf = make([]byte, 4096)
	}
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
	// check examines every thread of process pid; false means busy.
	check := func(pid, nthreads int) bool {
		examined++
		for _, tid := range w.pr.Tasks(pid, nthreads) {
			st, ok := w.pr.ThreadState(pid, tid)
			if !ok {
				continue // gone
			}
			switch st {
			case 'S', 'I':
			case 'Z', 'X':
				continue
			default: // R, D, T, t, W, P: running, disk sleep, stopped, traced
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
			if !st.Dead() && !check(pid, st.Threads) {
				return fgScan{busy: true}
			}
		}
		w.visited = w.pr.AppendChildren(w.visited, pid, st.Threads)
	}
	if !sawLeader {
		if st, ok := w.pr.Stat(pgrp); ok && st.Pgid == pgrp && !st.Dead() {
			if !check(pgrp, st.Threads) {
				return fgScan{busy: true}
			}
		}
	}
	if examined == 0 {
		return fgScan{}
	}
	return sc
}

// read reads a small /proc file into the scratch buffer.
func (w *waitState) read(path string) ([]byte, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	n, err := unix.Read(fd, w.buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return nil, false
	}
	return w.buf[:n], true
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

// classify reads /proc/PID/task/TID/syscall and decides what the thread waits for. fd is
// the terminal fd for blockTTYRead and blockTTYPoll.
func (w *waitState) classify(pid, tid int) (blockKind, int) {
	b, ok := w.read("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/syscall")
	if !ok {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid)); err != nil {
			return blockOther, 0 // gone
		}
		return blockUnknown, 0 // not allowed to look (a setuid program)
	}
	f := bytes.Fields(b)
	if len(f) == 0 || string(f[0]) == "running" {
		return blockBusy, 0
	}
	nr, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil || nr < 0 || len(f) < 7 {
		return blockOther, 0 // blocked outside a syscall (e.g. a page fault)
	}
	var args [6]uint64
	for i := range args {
		args[i], _ = strconv.ParseUint(string(bytes.TrimPrefix(f[i+1], []byte("0x"))), 16, 64)
	}
	switch nr {
	case unix.SYS_READ, unix.SYS_READV:
		fd := int(args[0])
		switch w.fdKind(pid, fd) {
		case fdTTY:
			return blockTTYRead, fd
		case fdUnknown:
			return blockUnknown, 0
		}
		return blockOther, 0
	case unix.SYS_PSELECT6, sysSelect:
		nfds, readfds := int(min(args[0], 1024)), args[1]
		if readfds == 0 || nfds <= 0 {
			return blockOther, 0
		}
		timeout := timeoutAt(pid, args[4], nr == unix.SYS_PSELECT6)
		if nfds == 1 { // only fd 0 can be in the set: no need to read it
			return w.withTimeout(tid, timeout, w.pollSet)(pid, []int{0})
		}
		set, ok := readMem(pid, readfds, (nfds+7)/8)
		if !ok {
			return blockUnknown, 0
		}
		var fds []int
		for fd := 0; fd < nfds; fd++ {
			if set[fd/8]&(1<<(fd%8)) != 0 {
				fds = append(fds, fd)
			}
		}
		return w.withTimeout(tid, timeout, w.pollSet)(pid, fds)
	case unix.SYS_PPOLL, sysPoll:
		n := int(min(args[1], 256))
		if n == 0 {
			return blockOther, 0
		}
		raw, ok := readMem(pid, args[0], n*8)
		if !ok {
			return blockUnknown, 0
		}
		var fds []int
		for i := 0; i < n; i++ {
			fd := int32(binary.NativeEndian.Uint32(raw[i*8:]))
			ev := binary.NativeEndian.Uint16(raw[i*8+4:])
			if fd >= 0 && ev&(unix.POLLIN|unix.POLLPRI) != 0 {
				fds = append(fds, int(fd))
			}
		}
		var timeout time.Duration
		if nr == unix.SYS_PPOLL {
			timeout = timeoutAt(pid, args[2], true)
		} else {
			timeout = msTimeout(args[2])
		}
		return w.withTimeout(tid, timeout, w.pollSet)(pid, fds)
	case unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2, sysEpollWait:
		fds, ok := w.epollSet(pid, int(args[0]))
		if !ok {
			return blockUnknown, 0
		}
		var timeout time.Duration
		if nr == unix.SYS_EPOLL_PWAIT2 {
			timeout = timeoutAt(pid, args[3], true)
		} else {
			timeout = msTimeout(args[3])
		}
		return w.withTimeout(tid, timeout, w.pollSet)(pid, fds)
	}
	return blockOther, 0
}

// noTimeout is the timeout of a wait without one.
const noTimeout time.Duration = -1

// msTimeout is the timeout of poll and epoll_wait: an int of milliseconds, negative for
// none.
func msTimeout(arg uint64) time.Duration {
	ms := int32(arg)
	if ms < 0 {
		return noTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// timeoutAt reads the timeout a waiting syscall points to: a struct timespec (ppoll,
// pselect6, epoll_pwait2) or a struct timeval (select), in process pid's memory. A null
// pointer is no timeout; an unreadable one counts as a short timeout, so the wait is
// looked at again rather than taken for a prompt at once.
func timeoutAt(pid int, addr uint64, timespec bool) time.Duration {
	if addr == 0 {
		return noTimeout
	}
	raw, ok := readMem(pid, addr, 16)
	if !ok {
		return 0
	}
	sec := int64(binary.NativeEndian.Uint64(raw))
	frac := int64(binary.NativeEndian.Uint64(raw[8:]))
	if !timespec {
		frac *= 1000 // microseconds
	}
	if sec < 0 || sec > int64(timedWaitMax/time.Second)+1 {
		return time.Duration(max(sec, 0)) * time.Second
	}
	return time.Duration(sec)*time.Second + time.Duration(frac)
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
		run, ok := w.threadRuntime(pid, tid)
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

// threadRuntime reads a thread's CPU time in nanoseconds (/proc/PID/task/TID/schedstat).
func (w *waitState) threadRuntime(pid, tid int) (uint64, bool) {
	b, ok := w.read("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/schedstat")
	if !ok {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(f[0]), 10, 64)
	return n, err == nil
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

// epollSet lists the fds an epoll instance watches for input (/proc/PID/fdinfo/EPFD).
func (w *waitState) epollSet(pid, epfd int) ([]int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		return nil, false
	}
	var fds []int
	for line := range bytes.Lines(b) {
		// "tfd:        0 events:       19 data: …"
		rest, ok := bytes.CutPrefix(line, []byte("tfd:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) < 3 || string(f[1]) != "events:" {
			continue
		}
		fd, err1 := strconv.Atoi(string(f[0]))
		ev, err2 := strconv.ParseUint(string(f[2]), 16, 32)
		if err1 == nil && err2 == nil && ev&(unix.EPOLLIN|unix.EPOLLPRI) != 0 {
			fds = append(fds, fd)
		}
	}
	return fds, true
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

var devPtmx = unix.Mkdev(5, 2)

// fdKind says whether fd of process pid is the session's terminal (its /dev/pts/N, or
// /dev/tty, which is the controlling terminal of every process of the session).
func (w *waitState) fdKind(pid, fd int) fdKindT {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), &st); err != nil {
		if err == unix.EACCES || err == unix.EPERM {
			return fdUnknown
		}
		return fdOther
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		if st.Rdev == devTTY || w.dev != 0 && st.Rdev == w.dev {
			return fdTTY
		}
		if st.Rdev == devPtmx {
			return fdPtmx
		}
	case unix.S_IFSOCK:
		return fdSocket
	case unix.S_IFIFO:
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
		var st unix.Stat_t
		if unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), &st) != nil {
			continue
		}
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFIFO:
			pipes = append(pipes, end{st.Dev, st.Ino})
		case st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == devPtmx:
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
			if err != nil {
				continue
			}
			for line := range bytes.Lines(b) {
				if v, ok := bytes.CutPrefix(line, []byte("tty-index:")); ok {
					if n, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil {
						var pts unix.Stat_t
						if unix.Stat("/dev/pts/"+strconv.Itoa(n), &pts) == nil {
							inner = append(inner, pts.Rdev)
						}
					}
				}
			}
		}
	}
	holds := func(kid int) bool {
		dir := "/proc/" + strconv.Itoa(kid) + "/fd/"
		d, err := os.Open(dir)
		if err != nil {
			return true // cannot tell: count it as a holder
		}
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, n := range names {
			var st unix.Stat_t
			if unix.Stat(dir+n, &st) != nil {
				continue
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFIFO:
				if slices.Contains(pipes, end{st.Dev, st.Ino}) {
					return true
				}
			case unix.S_IFCHR:
				if slices.Contains(inner, st.Rdev) {
					return true
				}
			}
		}
		return false
	}
	// A view of the detector in which the inner terminals are the terminal.
	sub := &waitState{buf: make([]byte, len(w.buf))}
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

// readMem reads n bytes of process pid's memory at addr (/proc/PID/mem).
func readMem(pid int, addr uint64, n int) ([]byte, bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	buf := make([]byte, n)
	m, err := unix.Pread(fd, buf, int64(addr))
	return buf, err == nil && m == n
}

// ttyInputPending asks, through a copy of process pid's own terminal fd (pidfd_getfd),
// whether a read would return data now. ok is false when the copy cannot be had.
func ttyInputPending(pid, fd int) (pending, ok bool) {
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false, false
	}
	defer unix.Close(pfd)
	dup, err := unix.PidfdGetfd(pfd, fd, 0)
	if err != nil {
		return false, false
	}
	defer unix.Close(dup)
	p, err := pty.PollIn(dup)
	return p, err == nil
}

// slaveInputPending is the fallback of ttyInputPending when pidfd_getfd is not available:
// it opens the slave (without making it a controlling terminal) and polls it.
func slaveInputPending(m *pty.Master) (pending, ok bool) {
	name, err := m.PeerName()
	if err != nil {
		return false, false
	}
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, false
	}
	defer unix.Close(fd)
	p, err := pty.PollIn(fd)
	return p, err == nil
}
