//go:build linux || darwin || freebsd

package pty

import "golang.org/x/sys/unix"

// TryWrite writes as much of p as the terminal takes now, without waiting: n < len(p)
// with a nil error means the terminal's input queue is full and the rest has to wait
// for the program to read (Write waits). It must not run at the same time as Write or
// another TryWrite (the session's single writer calls both).
func (m *Master) TryWrite(p []byte) (n int, err error) {
	err = m.control(func(fd int) error {
		var werr error
		for {
			n, werr = unix.Write(fd, p)
			if werr != unix.EINTR {
				break
			}
		}
		n = max(n, 0)
		if werr == unix.EAGAIN {
			return nil
		}
		return werr
	})
	return n, err
}
