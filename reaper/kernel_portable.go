//go:build (linux && ptyhub_portable) || darwin || freebsd

package reaper

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The portable paths of the reaper (macOS, FreeBSD, and Linux built with the
// ptyhub_portable tag): no subreaper, so a session's orphans re-parent to init, not to the
// reaper; sessionMembers finds them in the whole process table by session id and by the
// PTYHUB_SESSION entry of their environment. Leaders' exits are collected with wait4 on
// SIGCHLD; leaders are never held.

// kernelPaths says whether this build uses the kernel-only paths.
const kernelPaths = false

func becomeSubreaper() error { return nil }

// orphans: nothing re-parents to the reaper here.
func orphans(int) []int { return nil }

// threadID: orphans never re-parent to the reaper here, so the spawning thread is not
// needed (0: unknown).
func threadID() int { return 0 }

// leaderWaitFlags: the leaders' own wait4 also reports their stops.
const leaderWaitFlags = unix.WUNTRACED

// collectStops: done by the leaders' wait4 (leaderWaitFlags).
func (h *helper) collectStops() {}

// hasExited reports whether leader pid has exited (leaders are never held here, so the
// reaping loop has seen it). Called with h.mu held.
func (h *helper) hasExited(pid int, l *leader) bool { return l.exited }

// watch: SIGCHLD wakes reap.
func (h *helper) watch(int) {}

// streamWire: the manager's socket is SOCK_STREAM with length-prefixed packets (see
// wire.go); macOS has no AF_UNIX SOCK_SEQPACKET.
const streamWire = true

// socketPair makes the manager's socket pair, close-on-exec. macOS has no SOCK_CLOEXEC, so
// the flag is set afterwards under syscall.ForkLock (read), which keeps this process's
// forks out of the gap.
func socketPair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	return fds, err
}
