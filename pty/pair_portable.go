//go:build (linux && ptyhub_portable) || darwin || freebsd

package pty

import (
	"os"

	creack "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// openPair opens a new pseudo-terminal through creack/pty and returns a non-blocking
// duplicate of its master's descriptor (creack/pty left the master blocking: its Fd
// call did) and its slave. Both are close-on-exec.
func openPair() (master int, tty *os.File, err error) {
	p, tty, err := creack.Open()
	if err != nil {
		return -1, nil, err
	}
	// Duplicate the master and make the shared description non-blocking: os.NewFile
	// registers a non-blocking fd with the poller and never switches it back.
	nfd, err := unix.FcntlInt(p.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	p.Close()
	if err == nil {
		err = unix.SetNonblock(nfd, true)
		if err != nil {
			unix.Close(nfd)
		}
	}
	if err != nil {
		tty.Close()
		return -1, nil, &os.PathError{Op: "dup", Path: "/dev/ptmx", Err: err}
	}
	return nfd, tty, nil
}
