//go:build !linux || ptyhub_portable

package proc

import (
	"syscall"
	"time"
)

// handle is a process to signal (see Signal): its pid and start, checked again before
// each kill(2). darwin and FreeBSD have no pidfd (FreeBSD's process descriptors exist
// only for a child forked with pdfork), so the window between that check and the kill
// stays.
type handle struct {
	pid   int
	start uint64
}

// open returns the handle of r; ErrGone when r does not run any more (or has no start).
func open(r Ref) (handle, error) {
	if r.PID <= 0 || !same(r.PID, r.Start) {
		return handle{}, ErrGone
	}
	return handle{pid: r.PID, start: r.Start}, nil
}

// signal sends sig to the handle's process if its pid still names it.
func (h handle) signal(sig syscall.Signal) error { return kill(h.pid, h.start, sig) }

// close does nothing: the handle holds nothing.
func (h handle) close() {}

// waitExit looks at the process every 10 ms for up to d: true once it exited.
func (h handle) waitExit(d time.Duration) bool { return pollExit(h.pid, h.start, d) }
