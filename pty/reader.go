package pty

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FileReader reads a non-blocking file registered with the netpoller (the master, or the
// output pipe of a program without a terminal) with Master.ReadHold's protocol: held is
// true across each read(2) and while the caller holds the bytes, and idle is called each
// time a read finds nothing, before the goroutine waits. It is for one reader goroutine;
// a read allocates nothing.
type FileReader struct {
	rc   syscall.RawConn
	step func(fd uintptr) bool // r.readStep, made once
	raw  bool                  // reads through readFd (the master), else unix.Read

	// The read in progress.
	p    []byte
	pool *BufferPool // ReadPooled: p is lent by pool, taken once the file is readable
	lent []byte      // the buffer p is, while lent
	held *atomic.Bool
	idle func()
	n    int
	err  error
}

// NewFileReader returns a FileReader for f, which must be non-blocking (os.Pipe's files
// are). Its reads are told to the scheduler (unix.Read): even a non-blocking read of a
// pipe waits, in the kernel and without end, for the pipe's lock while the writing
// program holds it (a splice(2) from an empty socket into the pipe does), and a raw
// system call would hold the goroutine's P, and with it every stop of the world, across
// that wait. Only the master's reader reads raw (newMasterReader).
func NewFileReader(f *os.File) (*FileReader, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &FileReader{rc: rc}
	r.step = r.readStep
	return r, nil
}

// newMasterReader is NewFileReader for a terminal's master, whose reads are raw system
// calls on Linux (readFd): a non-blocking read of the master takes its read lock with a
// trylock and returns at once (after at most the kernel's flush of the terminal's
// buffer into its line discipline), so the goroutine keeps its P across it.
func newMasterReader(f *os.File) (*FileReader, error) {
	r, err := NewFileReader(f)
	if r != nil {
		r.raw = true
	}
	return r, err
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
	case n == 0 && (len(p) > 0 || r.pool != nil):
		held.Store(false)
		return 0, io.EOF
	}
	return n, nil
}

// A BufferPool lends read buffers of one size to ReadPooled, so a reader parked on a
// file with nothing to read holds no buffer. It is safe for concurrent use. Lending and
// taking back allocate nothing once the pool holds a buffer (it keeps each as a pointer
// to its first byte).
type BufferPool struct {
	size int
	p    sync.Pool
}

// NewBufferPool returns a pool of buffers of size bytes (size > 0).
func NewBufferPool(size int) *BufferPool {
	bp := &BufferPool{size: size}
	bp.p.New = func() any { return unsafe.SliceData(make([]byte, size)) }
	return bp
}

func (bp *BufferPool) get() []byte { return unsafe.Slice(bp.p.Get().(*byte), bp.size) }

// Put gives back a buffer ReadPooled returned (nil is ignored). The caller must not use
// it afterwards.
func (bp *BufferPool) Put(p []byte) {
	if cap(p) == bp.size {
		bp.p.Put(unsafe.SliceData(p))
	}
}

// ReadPooled is ReadHold into a buffer lent by pool: the buffer is taken only once the
// file has something to read and is given back before the goroutine parks, so an idle
// reader holds none. It returns the buffer read into (nil when n is 0); the caller gives
// it back with pool.Put once done with p[:n].
func (r *FileReader) ReadPooled(pool *BufferPool, held *atomic.Bool, idle func()) (p []byte, n int, err error) {
	r.pool = pool
	n, err = r.ReadHold(nil, held, idle)
	if r.lent != nil {
		p = r.lent
		r.lent = nil
	}
	r.pool = nil
	if n == 0 {
		pool.Put(p)
		p = nil
	}
	return p, n, err
}

// readStep is ReadHold's step inside RawConn.Read.
func (r *FileReader) readStep(fd uintptr) bool {
	if r.pool != nil && r.lent == nil {
		r.lent = r.pool.get()
		r.p = r.lent
	}
	for {
		r.held.Store(true)
		if r.raw {
			r.n, r.err = readFd(int(fd), r.p)
		} else {
			r.n, r.err = unix.Read(int(fd), r.p)
		}
		if r.err != syscall.EINTR {
			break
		}
	}
	if r.err == syscall.EAGAIN {
		r.held.Store(false)
		if r.lent != nil {
			// Parking: the buffer goes back until there is something to read.
			r.pool.Put(r.lent)
			r.lent, r.p = nil, nil
		}
		if r.idle != nil {
			r.idle()
		}
		return false // park until readable
	}
	return true
}
