//go:build linux && !ptyhub_portable

package proc

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// handle is a process opened for signalling (see Signal): its pidfd, or, where none could
// be opened, its pid and start, checked again before each kill(2).
type handle struct {
	fd    int // the pidfd; -1: none (see kill)
	pid   int
	start uint64
}

// open opens r for signalling: pidfd_open(r.PID), then the start read again, so the
// pidfd is known to be r's (had r exited and its pid been reused before the open, the
// start read after it would differ; a process that exits after it is only ever reached
// through the pidfd as itself). ErrGone when r does not run any more. When no pidfd can
// be had (ENOSYS before Linux 5.3, a seccomp filter's EPERM or ENOSYS) the handle falls
// back to the checked kill(2). Without a descriptor to spare (EMFILE, ENFILE) the start
// cannot be read either, and nothing is sent: a process that cannot be told from a later
// one is never signalled (the walk that found it needed descriptors too).
func open(r Ref) (handle, error) {
	if r.PID <= 0 || r.Start == 0 {
		return handle{}, ErrGone
	}
	fd, err := unix.PidfdOpen(r.PID, 0) // always close-on-exec
	if err == unix.ESRCH {
		return handle{}, ErrGone
	}
	if err != nil {
		if !same(r.PID, r.Start) {
			return handle{}, ErrGone
		}
		return handle{fd: -1, pid: r.PID, start: r.Start}, nil
	}
	if !same(r.PID, r.Start) {
		unix.Close(fd)
		return handle{}, ErrGone
	}
	return handle{fd: fd, pid: r.PID, start: r.Start}, nil
}

// signal sends sig to the handle's process: ErrGone once it is gone (reaped).
func (h handle) signal(sig syscall.Signal) error {
	if h.fd < 0 {
		return kill(h.pid, h.start, sig)
	}
	return errGone(unix.PidfdSendSignal(h.fd, sig, nil, 0))
}

// close closes the pidfd.
func (h handle) close() {
	if h.fd >= 0 {
		unix.Close(h.fd)
	}
}

// waitExit waits up to d for the process to exit: the pidfd turns readable then.
func (h handle) waitExit(d time.Duration) bool {
	if h.fd < 0 {
		return pollExit(h.pid, h.start, d)
	}
	fds := []unix.PollFd{{Fd: int32(h.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(max(d, 0)/time.Millisecond))
	if err != nil && err != unix.EINTR {
		return pollExit(h.pid, h.start, d)
	}
	return n > 0
}
