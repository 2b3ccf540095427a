//go:build linux || freebsd

package pty

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// waitFd waits up to timeout milliseconds (-1: no limit) until fd is readable (writable
// when write is set), or closeR or pokeR (-1: none) is readable. It reports whether fd is
// ready and whether pokeR is.
func waitFd(fd int, write bool, closeR, pokeR, timeout int) (ready, poked bool, err error) {
	ev := int16(unix.POLLIN)
	if write {
		ev = unix.POLLOUT
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: ev}, {Fd: int32(closeR), Events: unix.POLLIN}, {Fd: int32(pokeR), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, timeout)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, false, fmt.Errorf("poll: %w", err)
		}
		return fds[0].Revents != 0, fds[2].Revents != 0, nil
	}
}

// PollIn reports whether a read of the terminal fd would return data now (for a slave in
// canonical mode: a whole line is waiting). It flushes the kernel's pending input buffer
// work first and never consumes anything.
func PollIn(fd int) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("poll: %w", err)
		}
		return n > 0 && fds[0].Revents&unix.POLLIN != 0, nil
	}
}
