//go:build linux || darwin || freebsd

package pty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fallback waits for a master the netpoller refused: the descriptor stays non-blocking,
// and a Read or Write that would block waits in poll(2) (select(2) on macOS) for the
// master or a wake-up pipe. Close writes to closeW (never drained, so every waiter wakes,
// now and later); SetReadDeadline writes to pokeW, which only the reader drains.
type fallback struct {
	fd             int
	closeR, closeW int
	pokeR, pokeW   int

	closed   atomic.Bool
	deadline atomic.Int64 // read deadline, Unix nanoseconds; 0 means none

	// ops is held (read) by every Read, Write and ioctl for its whole duration, and taken
	// (write) by Close before the descriptors are closed.
	ops sync.RWMutex
}

func newFallback(fd int) (*fallback, error) {
	var c, p [2]int
	if err := unix.Pipe(c[:]); err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	if err := unix.Pipe(p[:]); err != nil {
		unix.Close(c[0])
		unix.Close(c[1])
		return nil, fmt.Errorf("pipe: %w", err)
	}
	for _, x := range []int{c[0], c[1], p[0], p[1]} {
		unix.CloseOnExec(x)
		unix.SetNonblock(x, true)
	}
	return &fallback{fd: fd, closeR: c[0], closeW: c[1], pokeR: p[0], pokeW: p[1]}, nil
}

// shut marks the master closed and wakes every waiter; false if it already was.
func (b *fallback) shut() bool {
	if b.closed.Swap(true) {
		return false
	}
	unix.Write(b.closeW, []byte{1})
	return true
}

// release closes the pipes; the caller holds ops and closes the master itself.
func (b *fallback) release() {
	for _, x := range []int{b.closeR, b.closeW, b.pokeR, b.pokeW} {
		unix.Close(x)
	}
}

func (b *fallback) setReadDeadline(t time.Time) error {
	if b.closed.Load() {
		return os.ErrClosed
	}
	var d int64
	if !t.IsZero() {
		d = max(t.UnixNano(), 1)
	}
	b.deadline.Store(d)
	b.ops.RLock()
	defer b.ops.RUnlock()
	if !b.closed.Load() {
		unix.Write(b.pokeW, []byte{1})
	}
	return nil
}

func (b *fallback) control(fn func(fd int) error) error {
	b.ops.RLock()
	defer b.ops.RUnlock()
	if b.closed.Load() {
		return os.ErrClosed
	}
	return fn(b.fd)
}

// read is Master.Read (held and idle nil) or Master.ReadHold.
func (b *fallback) read(p []byte, held *atomic.Bool, idle func()) (int, error) {
	b.ops.RLock()
	defer b.ops.RUnlock()
	setHeld := func(v bool) {
		if held != nil {
			held.Store(v)
		}
	}
	for {
		if b.closed.Load() {
			setHeld(false)
			return 0, io.EOF
		}
		timeout := -1
		if d := b.deadline.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				setHeld(false)
				return 0, os.ErrDeadlineExceeded
			}
			timeout = int(left.Milliseconds()) + 1
		}
		setHeld(true)
		n, err := unix.Read(b.fd, p)
		switch {
		case err == nil && n > 0:
			return n, nil
		case err == nil || errors.Is(err, syscall.EIO):
			setHeld(false)
			return 0, io.EOF
		case err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			setHeld(false)
			return 0, err
		}
		setHeld(false)
		if idle != nil {
			idle()
		}
		_, poked, err := waitFd(b.fd, false, b.closeR, b.pokeR, timeout)
		if err != nil {
			return 0, err
		}
		if poked {
			var buf [64]byte
			for {
				if n, _ := unix.Read(b.pokeR, buf[:]); n <= 0 {
					break
				}
			}
		}
	}
}

func (b *fallback) write(p []byte) (int, error) {
	b.ops.RLock()
	defer b.ops.RUnlock()
	done := 0
	for done < len(p) {
		if b.closed.Load() {
			return done, os.ErrClosed
		}
		n, err := unix.Write(b.fd, p[done:])
		if n > 0 {
			done += n
		}
		switch {
		case err == nil || err == unix.EINTR:
			continue
		case err != unix.EAGAIN:
			return done, err
		}
		if _, _, err := waitFd(b.fd, true, b.closeR, -1, -1); err != nil {
			return done, err
		}
	}
	return done, nil
}
