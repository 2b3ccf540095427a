// Package pty opens pseudo-terminals whose master side works with Go's netpoller, and
// decodes process exits.
//
// creack/pty (since v1.1.21) hands back a blocking master: Read pins an OS thread,
// SetReadDeadline is ignored and Close does not wake a blocked Read. Open here keeps the
// master non-blocking and does every ioctl through SyscallConn, so deadlines and Close
// work and an idle session costs no thread. Linux only.
package pty

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Master is the manager's side of a pseudo-terminal. Read and Write may be called
// concurrently (one reader, one writer); Close wakes both.
type Master struct {
	f  *os.File
	rc syscall.RawConn
}

// Attrs are the terminal flags a manager needs, read from the master (which reflects the
// slave's termios).
type Attrs struct {
	Echo      bool // ECHO: input is echoed; off at a password prompt
	Canonical bool // ICANON: line editing, lines limited to 4095 bytes
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
	return open(rows, cols)
}

// Read reads program output. At the end of the stream (every slave fd closed) it returns
// io.EOF, never EIO.
func (m *Master) Read(p []byte) (int, error) {
	n, err := m.f.Read(p)
	return n, EOF(err)
}

// Write types into the terminal. It blocks while the terminal's input queue is full.
func (m *Master) Write(p []byte) (int, error) { return m.f.Write(p) }

// Close closes the master: a blocked Read or Write returns, and the session is hung up
// once no one else holds the master.
func (m *Master) Close() error { return m.f.Close() }

// SetSize sets the window size; the foreground process group gets SIGWINCH when it changes.
func (m *Master) SetSize(rows, cols int) error { return m.setSize(rows, cols) }

// Size returns the window size as rows, cols.
func (m *Master) Size() (rows, cols int, err error) { return m.size() }

// Attrs reads the terminal's current flags.
func (m *Master) Attrs() (Attrs, error) { return m.attrs() }

// SetFlowControl turns output flow control (IXON) on or off in the terminal's settings.
// With it off, a ^S typed into the terminal is passed to the program as a byte instead
// of stopping all output until ^Q.
func (m *Master) SetFlowControl(on bool) error { return m.setFlowControl(on) }

// ForegroundPgrp returns the terminal's foreground process group.
func (m *Master) ForegroundPgrp() (int, error) { return m.foregroundPgrp() }

// Signal sends sig to the terminal's foreground process group (TIOCSIG), as the line
// discipline would for ^C, even when the program put the terminal in raw mode or input is
// queued behind a blocked write.
func (m *Master) Signal(sig syscall.Signal) error { return m.signal(sig) }

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
