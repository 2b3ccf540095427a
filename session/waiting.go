package session

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/pty"
)

// The waiting-for-input detector's common part: what one look concludes. How a look is
// made depends on what the platform's kernel tells (probeWait: waiting_kernel.go where
// proc.SyscallView, waiting_quiet.go elsewhere); the reads themselves are proc's.

// waitVerdict is the outcome of one look at the terminal's foreground.
type waitVerdict uint8

const (
	waitNo     waitVerdict = iota // the program is doing something else (runs, prints, has input to read)
	waitYes                       // the kernel says the program waits for the terminal
	waitMaybe                     // the kernel cannot tell: require quiet output
	waitUnsure                    // not yet known: look again later (a first look, a query being answered)
)

// waitingForInput reports whether the program in the foreground is blocked reading the
// terminal and its output has settled, and how that was decided (Result.WaitDetection).
// quietFor is how long no output has arrived. Called with collectMu held; it only reads
// the process table and polls, and changes nothing but the detector's cache.
func (s *Session) waitingForInput(quietFor time.Duration) (bool, string) {
	v, method := s.lookVerdict(quietFor)
	return v == waitYes, method
}

// lookVerdict is waitingForInput with the reason for a no: waitNo when the program was
// seen doing something else, waitUnsure when the look could not tell yet. It never
// returns waitMaybe: that becomes waitYes after quietFor reaches waitQuiet, waitUnsure
// before.
func (s *Session) lookVerdict(quietFor time.Duration) (waitVerdict, string) {
	s.wait.runPid = 0 // set again if this look finds a thread running
	if s.writing.Load() > 0 {
		return waitNo, "" // our own input (or a query's answer) is on its way to the program
	}
	if s.scr != nil && s.scr.m.AnsweredTo() < s.hub.End() {
		// A terminal query in the output may not be answered yet: the program waits for
		// ptyhub's answer, not for the agent. (Once answered, the answer sits in writing
		// and then in the terminal's input queue, which the look below sees.)
		return waitUnsure, ""
	}
	switch v, method := s.probeWait(quietFor); v {
	case waitYes:
		return waitYes, method
	case waitMaybe:
		if quietFor >= waitQuiet {
			return waitYes, method
		}
		return waitUnsure, method
	case waitUnsure:
		return waitUnsure, ""
	}
	return waitNo, ""
}

// waitState caches the detector's view between looks; used only under collectMu (or,
// for readerAhead's, by its caller alone).
type waitState struct {
	pr      proc.Reader
	visited []int // scratch for the process walk

	// The kernel view's (probeKernel).
	dev    uint64 // st_rdev of /dev/pts/N; 0 until known
	devErr bool   // PeerDevice failed: recognise the tty by /dev/tty only
	kids   []int  // scratch for the walk of a poller's descendants
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
	// the output then (set by probeKernel).
	quiet time.Duration
	end   int64
	// anyRead: a wait that involves the terminal counts as reading it even when it is
	// timed or beside a working child (the typeahead view, readerAhead: input typed then
	// will be read when the wait ends).
	anyRead bool
	// runPid and runTid are the thread the last look found running (its state R, D, T…),
	// runPid 0 if none: stillRuns reads only its state.
	runPid, runTid int

	// The heuristic's (probeQuiet).
	fg     []int     // the live processes of the foreground group at the last look
	pgrp   int       // the group the CPU baseline is of
	cpu    uint64    // its CPU time, unchanged since since
	cpuSet bool      // a baseline is taken
	since  time.Time // when cpu was last seen to change
}

// Detection methods reported in Result.WaitDetection.
const (
	methodRead  = "tty_read"
	methodPoll  = "tty_poll"
	methodQuiet = "quiet"
)

// stillRuns reports whether the thread the last look (lookVerdict) found running is
// still in a state that is not a sleep, by one read of its state: a look now would say
// no again. False when the last look found none, or the thread is gone. Called with
// collectMu held; it changes nothing.
func (s *Session) stillRuns() bool {
	w := &s.wait
	if w.runPid == 0 {
		return false
	}
	st, ok := w.pr.ThreadState(w.runPid, w.runTid)
	if !ok {
		return false
	}
	switch st {
	case 'S', 'I', 'Z', 'X':
		return false
	}
	return true
}

// waitDetectionAvailable says whether this platform has a waiting-for-input detector.
const waitDetectionAvailable = true

// maxWaitProcs bounds the processes one look examines (a huge foreground pipeline is not
// waiting at a prompt; it is not worth a long walk either).
const maxWaitProcs = 256

// probeWait looks once at the foreground process group of s's terminal, output having
// been quiet for quiet (collectMu held): through the kernel's view of blocked threads
// where there is one (probeKernel), by the heuristic otherwise (probeQuiet).
func (s *Session) probeWait(quiet time.Duration) (waitVerdict, string) {
	if proc.SyscallView {
		return s.probeKernel(quiet)
	}
	return s.probeQuiet()
}

// readerAhead reports whether the terminal's foreground group is not reading the
// terminal now (see readerAheadKernel). Without the kernel's view it cannot tell, and
// typed input is never held: false. It uses w, which its caller owns.
func (s *Session) readerAhead(w *waitState) bool {
	if proc.SyscallView {
		return s.readerAheadKernel(w)
	}
	return false
}

// outputSettled reports whether every byte the program printed is in the hub and read
// by the agent cursor (any cursor with settledAnyCursor): nothing unread at the master
// (poll flushes the kernel's pending buffer work first), nothing held by the reader
// goroutine, nothing unread in the hub. The order matters: see pty.Master.ReadHold.
// Called with collectMu held.
func (s *Session) outputSettled() bool {
	if pending, err := s.master.OutputPending(); err != nil || pending {
		return false
	}
	return !s.readHeld.Load() && (s.settledAnyCursor || s.hub.End() == s.cursor)
}

// slaveInputPending opens the slave (without making it a controlling terminal) and asks
// whether a read would return data now. It is also the fallback where another
// process's fd cannot be copied (see ttyInputPending).
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
