//go:build linux && !ptyhub_portable

package pty

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPair opens a new pseudo-terminal with plain system calls and returns its master's
// descriptor, non-blocking from its open (so os.NewFile registers it with the poller
// and Fd never turns it blocking), and its slave, blocking (what a child must get on
// its standard streams: the flag belongs to the file description the child shares).
// Both are close-on-exec. creack/pty's Open took 17 more calls here (os.OpenFile tries
// both ends on the poller, and its Fd calls set them back to blocking), on the start
// path of every session.
func openPair() (master int, tty *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, nil, &os.PathError{Op: "open", Path: "/dev/ptmx", Err: err}
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0) // unlockpt
	}
	if err != nil {
		unix.Close(fd)
		return -1, nil, &os.PathError{Op: "ioctl", Path: "/dev/ptmx", Err: err}
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return -1, nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return fd, os.NewFile(uintptr(sfd), name), nil
}
