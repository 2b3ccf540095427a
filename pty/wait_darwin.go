package pty

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// macOS's poll(2) does not support devices, so the fallback waits in select(2), which
// limits it to descriptors below FD_SETSIZE (1024).

// waitFd waits up to timeout milliseconds (-1: no limit) until fd is readable (writable
// when write is set), or closeR or pokeR (-1: none) is readable. It reports whether fd is
// ready and whether pokeR is.
func waitFd(fd int, write bool, closeR, pokeR, timeout int) (ready, poked bool, err error) {
	hi := max(fd, closeR, pokeR)
	if hi >= unix.FD_SETSIZE {
		return false, false, fmt.Errorf("select: descriptor %d over FD_SETSIZE", hi)
	}
	for {
		var r, w unix.FdSet
		if write {
			w.Set(fd)
		} else {
			r.Set(fd)
		}
		r.Set(closeR)
		if pokeR >= 0 {
			r.Set(pokeR)
		}
		var tv *unix.Timeval
		if timeout >= 0 {
			t := unix.NsecToTimeval(int64(timeout) * 1e6)
			tv = &t
		}
		_, err := unix.Select(hi+1, &r, &w, nil, tv)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, false, fmt.Errorf("select: %w", err)
		}
		return r.IsSet(fd) || w.IsSet(fd), pokeR >= 0 && r.IsSet(pokeR), nil
	}
}

// PollIn reports whether a read of the terminal fd would return data now (for a slave in
// canonical mode: a whole line is waiting). It never consumes anything.
func PollIn(fd int) (bool, error) {
	if fd >= unix.FD_SETSIZE {
		return false, fmt.Errorf("select: descriptor %d over FD_SETSIZE", fd)
	}
	for {
		var r unix.FdSet
		r.Set(fd)
		tv := unix.Timeval{}
		n, err := unix.Select(fd+1, &r, nil, nil, &tv)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("select: %w", err)
		}
		return n > 0 && r.IsSet(fd), nil
	}
}
