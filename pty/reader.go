package pty

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
)

// FileReader reads a non-blocking file registered with the netpoller (the master, or the
// output pipe of a program without a terminal) with Master.ReadHold's protocol: held is
// true across each read(2) and while the caller holds the bytes, and idle is called each
// time a read finds nothing, before the goroutine waits. It is for one reader goroutine;
// a read allocates nothing.
type FileReader struct {
	rc   syscall.RawConn
	step func(fd uintptr) bool // r.readStep, made once

	// The read in progress.
	p    []byte
	held *atomic.Bool
	idle func()
	n    int
	err  error
}

// NewFileReader returns a FileReader for f, which must be non-blocking (os.Pipe's files
// are).
func NewFileReader(f *os.File) (*FileReader, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &FileReader{rc: rc}
	r.step = r.readStep
	return r, nil
}

// ReadHold reads into p as Master.ReadHold does; held must not be nil, idle may be. At
// the end of the stream, after EIO or once the file is closed it returns io.EOF; after
// a passed read deadline an error that wraps os.ErrDeadlineExceeded.
func (r *FileReader) ReadHold(p []byte, held *atomic.Bool, idle func()) (int, error) {
	r.p, r.held, r.idle, r.n, r.err = p, held, idle, 0, nil
	err := r.rc.Read(r.step)
	n, rerr := max(r.n, 0), r.err
	r.p, r.held, r.idle = nil, nil, nil
	switch {
	case err != nil: // closed, or a deadline passed
		held.Store(false)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, err
		}
		return 0, io.EOF
	case rerr != nil:
		held.Store(false)
		return n, EOF(rerr)
	case n == 0 && len(p) > 0:
		held.Store(false)
		return 0, io.EOF
	}
	return n, nil
}

// readStep is ReadHold's step inside RawConn.Read.
func (r *FileReader) readStep(fd uintptr) bool {
	for {
		r.held.Store(true)
		r.n, r.err = readFd(int(fd), r.p)
		if r.err != syscall.EINTR {
			break
		}
	}
	if r.err == syscall.EAGAIN {
		r.held.Store(false)
		if r.idle != nil {
			r.idle()
		}
		return false // park until readable
	}
	return true
}
