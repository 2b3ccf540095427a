//go:build linux && !ptyhub_portable

package reaper

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/proc"
)

// The kernel-only paths of the reaper (Linux without the ptyhub_portable tag): it is a
// child subreaper, so orphans of a session re-parent to it and a kill finds them by
// walking its own children; a pidfd wakes it when a leader exits; a held leader's exit is
// peeked at with waitid(WNOWAIT).

// kernelPaths says whether this build uses the kernel-only paths.
const kernelPaths = true

func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// orphans lists the reaper's children, leaders and adopted orphans alike.
func orphans(self int) []int { return proc.Children(self) }

// threadID is the calling OS thread's id (the spawning thread, see orphanCandidates).
func threadID() int { return unix.Gettid() }

// leaderWaitFlags: stops are collected by collectStops, not by the leaders' wait4.
const leaderWaitFlags = 0

// collectStops continues every stopped leader, one waitid(P_ALL, WSTOPPED) per stop: a
// held leader's exit stays for the manager to read and is not looked for here, so a
// SIGCHLD costs no call per leader alive. Each waitid walks every child in the kernel,
// which with a thousand sessions alive is most of what a reap costs, so it is called
// without h.mu and takes it only to continue a stopped leader: a leader's pid stays in
// h.leaders until it is reaped, which happens under h.mu, so the pid checked and
// signalled there names that leader.
func (h *helper) collectStops() {
	for {
		var info unix.Siginfo
		if unix.Waitid(unix.P_ALL, 0, &info, unix.WSTOPPED|unix.WNOHANG, nil) != nil || siginfoPid(&info) == 0 {
			break
		}
		pid := int(siginfoPid(&info))
		h.mu.Lock()
		if _, ok := h.leaders[pid]; ok {
			h.continueStopped(pid, syscall.Signal(siginfoStatus(&info)))
		}
		h.mu.Unlock()
	}
}

// hasExited reports whether leader pid has exited; a held leader's exit is looked for
// here, when asked (it stays unreaped for the manager). Called with h.mu held.
func (h *helper) hasExited(pid int, l *leader) bool {
	if l.hold && !l.exited {
		var peek unix.Siginfo
		if unix.Waitid(unix.P_PID, pid, &peek, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) == nil && siginfoPid(&peek) != 0 {
			l.exited = true
		}
	}
	return l.exited
}

// watch wakes the reaping loop as soon as the leader pid exits. A pidfd on the netpoller
// wakes faster than SIGCHLD's trip through the runtime's signal goroutine, and costs no
// thread while it waits. It does not reap (WNOWAIT): reap owns every wait. Ends when the
// leader exits.
func (h *helper) watch(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return // SIGCHLD still wakes reap
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || siginfoPid(&info) != 0
	})
	h.reap()
}

// siginfoPid extracts si_pid from a siginfo filled by waitid (0: no child has exited).
func siginfoPid(info *unix.Siginfo) int32 {
	// si_signo, si_errno, si_code (3×int32), padding on 64-bit, then si_pid.
	b := (*[32]byte)(unsafe.Pointer(info))
	off := 12
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	return *(*int32)(unsafe.Pointer(&b[off]))
}

// siginfoStatus extracts si_status from a siginfo filled by waitid.
func siginfoStatus(info *unix.Siginfo) int32 {
	b := (*[32]byte)(unsafe.Pointer(info))
	off := 20
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 24
	}
	return *(*int32)(unsafe.Pointer(&b[off]))
}

// streamWire: the manager's socket is SOCK_SEQPACKET (see wire.go).
const streamWire = false

func socketPair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
}
