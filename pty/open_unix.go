//go:build linux || darwin || freebsd

package pty

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	creack "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// open allocates the terminal (openPair) and wraps the master (see the package
// comment). With fallback set, the poller is not tried: tests use it to run the fallback
// on a platform whose poller would accept the master.
func open(rows, cols int, fallback bool) (*Master, *os.File, error) {
	r, c, err := clampSize(rows, cols)
	if err != nil {
		return nil, nil, err
	}
	nfd, tty, err := openPair()
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return nil, nil, fmt.Errorf("pty: open: pty limit reached (see /proc/sys/kernel/pty/max): %w", err)
		}
		return nil, nil, fmt.Errorf("pty: open: %w", err)
	}
	m := &Master{f: os.NewFile(uintptr(nfd), "/dev/ptmx"), peer: tty.Name()}
	fail := func(err error) (*Master, *os.File, error) {
		m.Close()
		tty.Close()
		return nil, nil, fmt.Errorf("pty: %w", err)
	}
	if m.rc, err = m.f.SyscallConn(); err != nil {
		return fail(err)
	}
	if m.rd, err = newMasterReader(m.f); err != nil {
		return fail(err)
	}
	if err := creack.Setsize(m.f, &creack.Winsize{Rows: r, Cols: c}); err != nil {
		return fail(fmt.Errorf("set size: %w", err))
	}
	ok, probing := false, false
	if !fallback {
		ok, probing = m.polled(tty)
	}
	if !ok {
		if m.fb, err = newFallback(nfd); err != nil {
			return fail(err)
		}
		if probing { // the probe byte may still be queued: the session must not see it
			var b [1]byte
			m.fb.setReadDeadline(time.Now().Add(2 * time.Second))
			m.fb.read(b[:], nil, nil)
			m.fb.setReadDeadline(time.Time{})
		}
	}
	return m, tty, nil
}

// probeByte is what polled writes to the slave to see the poller wake a reader.
const probeByte = '.'

// polled reports whether the master really is on the netpoller: the poller must accept a
// deadline (it refuses one for a descriptor it could not register), and, where
// probeDelivery is set, a byte written to the slave must wake a Read through it. probing
// is set when that byte was written and not read.
func (m *Master) polled(tty *os.File) (ok, probing bool) {
	if err := m.f.SetReadDeadline(time.Time{}); err != nil {
		return false, false
	}
	if !probeDelivery {
		return true, false
	}
	if _, err := tty.Write([]byte{probeByte}); err != nil {
		return false, false
	}
	var b [1]byte
	m.f.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := m.f.Read(b[:])
	m.f.SetReadDeadline(time.Time{})
	if n == 1 && err == nil {
		return true, false
	}
	return false, true
}

// setsize and getsize go through creack/pty, which calls f.Fd: safe on a master wrapped
// as in open.
func setsize(f *os.File, rows, cols uint16) error {
	return creack.Setsize(f, &creack.Winsize{Rows: rows, Cols: cols})
}

func getsize(f *os.File) (rows, cols int, err error) {
	return creack.Getsize(f)
}

func attrs(fd int) (Attrs, error) {
	t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return Attrs{}, err
	}
	return Attrs{
		Echo:      t.Lflag&unix.ECHO != 0,
		Canonical: t.Lflag&unix.ICANON != 0,
		Signals:   t.Lflag&unix.ISIG != 0,
		ICRNL:     t.Iflag&unix.ICRNL != 0,
		EOF:       t.Cc[unix.VEOF],
		Intr:      t.Cc[unix.VINTR],
		Quit:      t.Cc[unix.VQUIT],
		Susp:      t.Cc[unix.VSUSP],
		IXON:      t.Iflag&unix.IXON != 0,
		IXANY:     t.Iflag&unix.IXANY != 0,
		Stop:      t.Cc[unix.VSTOP],
		Start:     t.Cc[unix.VSTART],
	}, nil
}

func setFlowControl(fd int, on bool) error {
	t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return fmt.Errorf("tcgetattr: %w", err)
	}
	if on {
		t.Iflag |= unix.IXON
	} else {
		t.Iflag &^= unix.IXON
	}
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, t); err != nil {
		return fmt.Errorf("tcsetattr: %w", err)
	}
	return nil
}

func foregroundPgrp(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.TIOCGPGRP) }

func signalPgrp(fd int, sig syscall.Signal) error {
	return unix.IoctlSetInt(fd, unix.TIOCSIG, int(sig))
}

func rdev(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return uint64(st.Rdev), nil
}
