// Package pty opens pseudo-terminals whose master side works with Go's netpoller, and
// decodes process exits.
//
// On Linux the terminal is opened with plain system calls, the master non-blocking from
// its open, so Go registers it with the netpoller (epoll) and keeps it so. Elsewhere (and
// in portable builds) it is allocated and unlocked by github.com/creack/pty, which since
// v1.1.21 hands back a blocking master (its ioctls call Fd, which switches the file to
// blocking mode): Read pins an OS thread, SetReadDeadline is ignored and Close does not
// wake a blocked Read. Open therefore re-wraps that master once: a close-on-exec
// duplicate is made non-blocking before os.NewFile, so Go registers it with the netpoller
// (kqueue), and the original is closed. A file made either way keeps its mode when Fd is
// called, so creack/pty's Setsize and Getsize stay usable on it. The slave is blocking,
// as a child's standard streams must be.
//
// Open checks that the registration took: a deadline must be accepted (and, on the
// portable paths, a byte written to the slave must wake a reader through the poller). When
// it does not, for example where kqueue refuses a tty fd, the master falls back to poll(2)
// (select(2) on macOS) over the master and two wake-up pipes, so deadlines and Close still
// wake a blocked Read or Write; Mode says which one is in use.
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
)

// Master is the manager's side of a pseudo-terminal. Read and Write may be called
// concurrently (one reader, one writer); Close wakes both.
type Master struct {
	f    *os.File
	rc   syscall.RawConn
	peer string // slave path, e.g. /dev/pts/3 or /dev/ttys004

	// ctl is held (read) around ioctls that go through f.Fd, and taken (write) by Close,
	// so an ioctl never lands on a closed and reused descriptor.
	ctl sync.RWMutex

	fb *fallback   // nil when the master is registered with the netpoller
	rd *FileReader // ReadHold on the netpoller
}

// Mode names how a Master waits for its descriptor.
type Mode string

const (
	// ModePoller: the master is registered with Go's netpoller; an idle reader costs no
	// thread.
	ModePoller Mode = "netpoller"
	// ModeFallback: the poller refused the master; each blocked Read or Write waits in
	// poll(2) or select(2) on an OS thread, woken by Close and deadline changes through
	// pipes.
	ModeFallback Mode = "poll"
)

// Attrs are the terminal flags a manager needs, read from the master (which reflects the
// slave's termios).
type Attrs struct {
	Echo      bool // ECHO: input is echoed; off at a password prompt
	Canonical bool // ICANON: line editing, lines limited in length
	Signals   bool // ISIG: ^C/^Z/^\ become signals
	ICRNL     bool // CR is mapped to NL on input
	EOF       byte // VEOF character (usually ^D)
	Intr      byte // VINTR character (usually ^C)
	Quit      byte // VQUIT character (usually ^\)
	Susp      byte // VSUSP character (usually ^Z)
	IXON      bool // output flow control: VSTOP (^S) stops output until VSTART (^Q)
	IXANY     bool // with IXON, any input character restarts stopped output
	Stop      byte // VSTOP character (usually ^S)
	Start     byte // VSTART character (usually ^Q)
}

// Open allocates a new pseudo-terminal of rows×cols (at least 1×1) and returns its master
// and its slave. The caller gives the slave to a child and must close its own copy of it
// once the child has it, or end of stream never comes. Both fds are close-on-exec.
func Open(rows, cols int) (*Master, *os.File, error) {
	return open(rows, cols, false)
}

// Mode says whether the master is on the netpoller or on the poll(2) fallback.
func (m *Master) Mode() Mode {
	if m.fb != nil {
		return ModeFallback
	}
	return ModePoller
}

// Read reads program output. At the end of the stream (every slave fd closed) or after
// Close it returns io.EOF, never EIO; after a passed read deadline it returns an error
// that wraps os.ErrDeadlineExceeded.
func (m *Master) Read(p []byte) (int, error) {
	if m.fb != nil {
		return m.fb.read(p, nil, nil)
	}
	n, err := m.f.Read(p)
	return n, EOF(err)
}

// ReadHold is Read for a reader that must account for the bytes it holds. It stores true
// in held immediately before each read(2) and false when a read finds nothing and the
// goroutine parks; when it returns n > 0, held is still true and the caller stores false
// once the bytes are where others look for them. So another goroutine that finds the
// output queue empty (OutputPending) and then held false knows that every byte the
// program printed before is stored. When idle is not nil it is called each time a read
// finds nothing, after held is stored false and before the goroutine waits: the output
// has paused (a batch reader can be told, see broadcast.Hub.Flush). At the end of the
// stream it returns io.EOF.
func (m *Master) ReadHold(p []byte, held *atomic.Bool, idle func()) (int, error) {
	if m.fb != nil {
		return m.fb.read(p, held, idle)
	}
	return m.rd.ReadHold(p, held, idle)
}

// ReadPooled is ReadHold into a buffer lent by pool (see FileReader.ReadPooled): an idle
// reader holds no buffer. It returns the buffer read into (nil when n is 0); the caller
// gives it back with pool.Put once done with p[:n]. On the poll(2) fallback the buffer is
// held while the read waits.
func (m *Master) ReadPooled(pool *BufferPool, held *atomic.Bool, idle func()) (p []byte, n int, err error) {
	if m.fb != nil {
		p = pool.get()
		n, err = m.fb.read(p, held, idle)
		if n == 0 {
			pool.Put(p)
			return nil, 0, err
		}
		return p, n, err
	}
	return m.rd.ReadPooled(pool, held, idle)
}

// SetReadDeadline sets the deadline for pending and future Reads; the zero time clears
// it. A Read blocked when the deadline passes returns os.ErrDeadlineExceeded.
func (m *Master) SetReadDeadline(t time.Time) error {
	if m.fb != nil {
		return m.fb.setReadDeadline(t)
	}
	return m.f.SetReadDeadline(t)
}

// Write types into the terminal. It blocks while the terminal's input queue is full;
// Close wakes it.
func (m *Master) Write(p []byte) (int, error) {
	if m.fb != nil {
		return m.fb.write(p)
	}
	return m.f.Write(p)
}

// Close closes the master: a blocked Read or Write returns, and the session is hung up
// once no one else holds the master. Later calls return an error.
func (m *Master) Close() error {
	if m.fb != nil && !m.fb.shut() {
		return os.ErrClosed
	}
	m.ctl.Lock()
	defer m.ctl.Unlock()
	if m.fb != nil {
		m.fb.ops.Lock() // every Read and Write has left
		defer m.fb.ops.Unlock()
		m.fb.release()
	}
	return m.f.Close()
}

// SetSize sets the window size; the foreground process group gets SIGWINCH when it changes.
func (m *Master) SetSize(rows, cols int) error {
	r, c, err := clampSize(rows, cols)
	if err != nil {
		return err
	}
	return m.withFile(func(f *os.File) error { return setsize(f, r, c) })
}

// Size returns the window size as rows, cols.
func (m *Master) Size() (rows, cols int, err error) {
	err = m.withFile(func(f *os.File) error {
		rows, cols, err = getsize(f)
		return err
	})
	return rows, cols, err
}

// Attrs reads the terminal's current flags.
func (m *Master) Attrs() (a Attrs, err error) {
	err = m.control(func(fd int) error {
		a, err = attrs(fd)
		if err != nil {
			return fmt.Errorf("tcgetattr: %w", err)
		}
		return nil
	})
	return a, err
}

// SetFlowControl turns output flow control (IXON) on or off in the terminal's settings.
// With it off, a ^S typed into the terminal is passed to the program as a byte instead
// of stopping all output until ^Q.
func (m *Master) SetFlowControl(on bool) error {
	return m.control(func(fd int) error { return setFlowControl(fd, on) })
}

// ForegroundPgrp returns the terminal's foreground process group.
func (m *Master) ForegroundPgrp() (pgrp int, err error) {
	err = m.control(func(fd int) error {
		pgrp, err = foregroundPgrp(fd)
		if err != nil {
			return fmt.Errorf("tcgetpgrp: %w", err)
		}
		return nil
	})
	return pgrp, err
}

// Signal sends sig to the terminal's foreground process group (TIOCSIG), as the line
// discipline would for ^C, even when the program put the terminal in raw mode or input is
// queued behind a blocked write.
func (m *Master) Signal(sig syscall.Signal) error {
	return m.control(func(fd int) error {
		if err := signalPgrp(fd, sig); err != nil {
			return fmt.Errorf("TIOCSIG: %w", err)
		}
		return nil
	})
}

// OutputPending reports whether the program printed bytes that no read of the master
// has taken yet. It does not consume anything. On Linux a pty has no output queue of its
// own and FIONREAD on the master misses bytes still in the kernel's flip buffer, so this
// asks poll(2) (select(2) on macOS), which flushes that buffer first.
func (m *Master) OutputPending() (bool, error) {
	var pending bool
	err := m.control(func(fd int) error {
		var err error
		pending, err = PollIn(fd)
		return err
	})
	return pending, err
}

// PeerName returns the path of the slave side (e.g. /dev/pts/3). It opens nothing.
func (m *Master) PeerName() (string, error) { return m.peer, nil }

// PeerDevice returns the device number (st_rdev) of the slave side, to recognise the
// terminal among a process's open files. It stats the device node and opens nothing.
func (m *Master) PeerDevice() (uint64, error) {
	return rdev(m.peer)
}

// control runs fn on the master's descriptor without changing its mode, holding it open.
func (m *Master) control(fn func(fd int) error) error {
	if m.fb != nil {
		return m.fb.control(fn)
	}
	var ferr error
	if err := m.rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// withFile runs fn on the master's *os.File for creack/pty's calls, which use Fd; the
// master was made non-blocking before os.NewFile, so Fd does not switch it to blocking.
func (m *Master) withFile(fn func(f *os.File) error) error {
	m.ctl.RLock()
	defer m.ctl.RUnlock()
	if m.fb != nil && m.fb.closed.Load() {
		return os.ErrClosed
	}
	if err := m.rc.Control(func(uintptr) {}); err != nil { // closed?
		return err
	}
	return fn(m.f)
}

// EOF maps the end-of-stream errors of a pty master (EIO on Linux once every slave fd is
// closed, os.ErrClosed after Close) to io.EOF, and passes every other error through.
func EOF(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.EIO) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF) {
		return io.EOF
	}
	return err
}

func clampSize(rows, cols int) (uint16, uint16, error) {
	if rows < 1 || cols < 1 || rows > 0xffff || cols > 0xffff {
		return 0, 0, fmt.Errorf("pty: window size %dx%d out of range", rows, cols)
	}
	return uint16(rows), uint16(cols), nil
}
