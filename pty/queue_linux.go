package pty

import (
	"fmt"
	"io"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Queue and device queries on the master, for deciding that a program waits for input.
// Every ioctl goes through SyscallConn, so the master stays non-blocking (never Fd()).
//
// Measured on Linux 6.18: TIOCOUTQ on the master is always 0 (a pty has no output queue
// of its own: bytes typed at the master go straight to the slave's flip buffer), and
// FIONREAD/TIOCINQ on the master count only what the line discipline already holds, not
// bytes still in the flip buffer. poll(2) is the exact question: n_tty_poll first flushes
// pending buffer work, then asks whether a read would return data.

// OutputPending reports whether the program printed bytes that no read of the master
// has taken yet (including bytes still in the kernel's flip buffer, which it flushes).
// It does not consume anything.
func (m *Master) OutputPending() (bool, error) {
	var pending bool
	err := m.control(func(fd int) error {
		var err error
		pending, err = PollIn(fd)
		return err
	})
	return pending, err
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

// PeerName returns the path of the slave side, /dev/pts/N (TIOCGPTN). It opens nothing.
func (m *Master) PeerName() (string, error) {
	var n int
	err := m.control(func(fd int) error {
		var err error
		n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		if err != nil {
			return fmt.Errorf("TIOCGPTN: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return "/dev/pts/" + strconv.Itoa(n), nil
}

// PeerDevice returns the device number (st_rdev) of the slave side, /dev/pts/N, to
// recognise the terminal among a process's open files. It stats the device node and
// opens nothing.
func (m *Master) PeerDevice() (uint64, error) {
	path, err := m.PeerName()
	if err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Rdev, nil
}

// ReadHold is Read for a reader that must account for the bytes it holds. It stores true
// in held immediately before each read(2) and false when a read finds nothing and the
// goroutine parks; when it returns n > 0, held is still true and the caller stores false
// once the bytes are where others look for them. So another goroutine that finds the
// output queue empty (OutputPending) and then held false knows that every byte the
// program printed before is stored. At the end of the stream it returns io.EOF.
func (m *Master) ReadHold(p []byte, held *atomic.Bool) (int, error) {
	var n int
	var rerr error
	err := m.rc.Read(func(fd uintptr) bool {
		for {
			held.Store(true)
			n, rerr = unix.Read(int(fd), p)
			if rerr != unix.EINTR {
				break
			}
		}
		if rerr == unix.EAGAIN {
			held.Store(false)
			return false // park until readable
		}
		return true
	})
	if err != nil { // the master was closed
		held.Store(false)
		return 0, io.EOF
	}
	if n < 0 {
		n = 0
	}
	if rerr != nil {
		held.Store(false)
		return n, EOF(rerr)
	}
	if n == 0 && len(p) > 0 {
		held.Store(false)
		return 0, io.EOF
	}
	return n, nil
}
