package proc

import (
	"context"
	"errors"
	"syscall"
	"time"
)

// Killing a process by its pid alone is racy: between the read that found the process
// (its start time, session id, environment) and the kill(2), the process can exit, be
// reaped by its parent, and its pid be handed to a new, unrelated process of the user,
// which the kill would then hit. So every signal ptyhub sends to a process it found in
// the process table goes through Signal or the kill sequence below, which name the
// process by a Ref (pid and start) and send nothing once the pid names another process.
// How close that comes to exact depends on the OS (see Signal).
//
// A process group (kill(-pgid)) has no such handle: a group is named by a number only.
// Its number is the pid of the process that made it, and the kernel hands that number to
// no new process while the group has a member (or that process is unreaped). So a
// kill(-pgid) is exact while the caller knows a member lives: the reaper signals a
// session leader's group only while it holds the leader unreaped; a group found some
// other way (a terminal's foreground group) is checked to have a live member of the
// session just before the kill, and only a group that ends in that instant and whose
// number is handed out again at once could be hit instead (see session.liveGroup).

// Ref names one incarnation of a process: its pid and its start identifier (Info.Start)
// as read from the process table. A later process with the same pid has another start
// unless it started within the same unit of the start (a clock tick, 10 ms, on Linux; a
// microsecond on the BSDs): pids are handed out in turn, so that takes the whole pid space
// to wrap within the unit (or a privileged process setting the next pid, as the tests
// do). So a Ref tells the process read from a later one with its pid.
type Ref struct {
	PID   int
	Start uint64
}

// Ref returns the Ref of the process i describes.
func (i Info) Ref() Ref { return Ref{i.PID, i.Start} }

// Refs returns the Refs of ps.
func Refs(ps []Info) []Ref {
	out := make([]Ref, len(ps))
	for i, p := range ps {
		out[i] = p.Ref()
	}
	return out
}

// Signal sends each of sigs, in order, to the process r names and to no other one. It
// returns ErrGone, having sent nothing, when r.PID does not name that process any more
// (it exited — a zombie counts as exited —, or the pid is a later process's now: its
// start differs) or when r.Start is 0 (nothing tells the process). Another error is the
// kernel's (EPERM: the process is not ours to signal), for the first signal refused.
//
// On Linux (not under the ptyhub_portable tag) it opens a pidfd of r.PID, reads the start
// again, and sends through the pidfd: a pidfd is bound to the process it was opened on,
// and a signal through it reaches that process or, once it is reaped, nothing — never a
// later process with the same pid. Cost: pidfd_open, the read of /proc/PID/stat (open,
// read, close), one pidfd_send_signal per signal and a close: 5 system calls more than
// kill(2) alone per process, whatever the number of signals. Where pidfd_open is not
// there (kernels before 5.3, a seccomp filter refusing it) it falls back to what the
// other systems do.
//
// Elsewhere (darwin, FreeBSD, the portable build): the start is read, then kill(2) is
// called for each signal. The window that remains is between that read and the kill: the
// process would have to exit, be reaped, and its pid be handed out again within it.
func Signal(r Ref, sigs ...syscall.Signal) error {
	h, err := open(r)
	if err != nil {
		return err
	}
	defer h.close()
	for _, sig := range sigs {
		if err := h.signal(sig); err != nil {
			return err
		}
	}
	return nil
}

// same reports whether pid still names the live process started at start (never when
// start is 0: an unknown start tells nothing).
func same(pid int, start uint64) bool {
	return start != 0 && StartTime(pid) == start
}

// errGone maps "no such process" from the kernel to ErrGone.
func errGone(err error) error {
	if errors.Is(err, syscall.ESRCH) {
		return ErrGone
	}
	return err
}

// SignalGroup sends sig to every process of the group pgid (kill(-pgid)): the kernel
// signals them together, so a member forking meanwhile does not leave an unsignalled
// child. A group has no pidfd; it is exact only while the caller knows the group has a
// member, which keeps the number from being handed to a new process (see above): a
// session leader it holds unreaped, or a member found alive just before (then a group
// that ends in that instant, and whose number goes at once to a new group, is the one
// case where the new group is hit).
func SignalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return ErrGone
	}
	return errGone(syscall.Kill(-pgid, sig))
}

// SignalChild sends sig to pid, a child of this process that it has not reaped (waited
// for): its pid names no other process until that wait, so kill(2) is exact, and the
// caller must make sure the wait cannot happen meanwhile (the reaper holds its lock over
// both).
func SignalChild(pid int, sig syscall.Signal) error {
	if pid <= 1 {
		return ErrGone
	}
	return errGone(syscall.Kill(pid, sig))
}

// Signalable reports whether this process may send pid a signal (kill(pid, 0) succeeds):
// false for another user's process (a setuid program's included) and for a pid that is
// gone. No signal is sent, so a pid reused meanwhile is not harmed; the answer is about
// whatever has the pid now.
func Signalable(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// Terminate is the first, polite half of the kill sequence: SIGHUP (the terminal went
// away), SIGCONT (so a stopped process can act on it) and SIGTERM to every process of ps
// that still runs (see Signal: a process whose pid names another one now is left out).
func Terminate(ps []Ref) {
	for _, r := range ps {
		Signal(r, syscall.SIGHUP, syscall.SIGCONT, syscall.SIGTERM)
	}
}

// Escalate is the second half: it waits up to grace for left() to come back empty
// (checking with a backoff from 1 ms to 50 ms), then runs up to 100 rounds of SIGSTOP
// and SIGKILL to what left() returns, stopping first so that a fork storm cannot outrun
// the kills. It returns true once left() is empty. left must re-read the process table;
// each round signals only the processes it names (see Signal), each through one handle
// for both signals, opened escalateBatch at a time: a fork storm of thousands never has
// the caller hold thousands of pidfds (a manager's descriptors are its sessions').
func Escalate(left func() []Ref, grace time.Duration) bool {
	deadline := time.Now().Add(grace)
	wait := time.Millisecond
	for time.Now().Before(deadline) {
		time.Sleep(wait)
		wait = min(wait*2, 50*time.Millisecond)
		if len(left()) == 0 {
			return true
		}
	}
	var hs []handle
	for range 100 {
		l := left()
		if len(l) == 0 {
			return true
		}
		for len(l) > 0 {
			batch := l[:min(len(l), escalateBatch)]
			l = l[len(batch):]
			hs = hs[:0]
			for _, r := range batch {
				if h, err := open(r); err == nil {
					hs = append(hs, h)
				}
			}
			for _, h := range hs {
				h.signal(syscall.SIGSTOP)
			}
			for _, h := range hs {
				h.signal(syscall.SIGKILL)
				h.close()
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return len(left()) == 0
}

// escalateBatch bounds the handles (pidfds) a round of Escalate holds at once.
const escalateBatch = 64

// Kill runs the whole sequence: Terminate(found), then Escalate(left, grace).
func Kill(found []Ref, left func() []Ref, grace time.Duration) bool {
	Terminate(found)
	return Escalate(left, grace)
}

// kill sends sig with kill(2) to pid if it still names the process started at start:
// ErrGone otherwise. What remains is the window between the read of the start and the
// kill(2), in which the process would have to exit, be reaped and its pid go to another.
func kill(pid int, start uint64, sig syscall.Signal) error {
	if !same(pid, start) {
		return ErrGone
	}
	return errGone(syscall.Kill(pid, sig))
}

// Process is one process opened by its Ref, to be signalled and waited for as that
// process only (see Signal): on Linux it holds a pidfd until Close.
type Process struct{ h handle }

// Open opens the process r names; ErrGone when it does not run any more (or r.Start is
// 0). Close releases it.
func Open(r Ref) (*Process, error) {
	h, err := open(r)
	if err != nil {
		return nil, err
	}
	return &Process{h}, nil
}

// Signal sends sig to the process; ErrGone once it is gone.
func (p *Process) Signal(sig syscall.Signal) error { return p.h.signal(sig) }

// Wait waits until the process has exited (a zombie counts), at most until the deadline
// or the end of ctx; it reports whether it exited. On Linux the pidfd wakes it (poll(2),
// in steps of at most 100 ms to look at ctx); elsewhere the process is looked at every
// 10 ms.
func (p *Process) Wait(ctx context.Context, deadline time.Time) bool {
	for {
		if p.h.waitExit(min(time.Until(deadline), 100*time.Millisecond)) {
			return true
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return false
		}
	}
}

// Close releases the process (its pidfd).
func (p *Process) Close() { p.h.close() }

// pollExit looks at pid every 10 ms for up to d: true once it no longer names the process
// started at start.
func pollExit(pid int, start uint64, d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if !same(pid, start) {
			return true
		}
		if !time.Now().Before(end) {
			return false
		}
	}
}
