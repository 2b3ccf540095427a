package pty

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func open(rows, cols int) (*Master, *os.File, error) {
	r, c, err := clampSize(rows, cols)
	if err != nil {
		return nil, nil, err
	}
	// os.OpenFile registers the fd with the netpoller and makes it non-blocking.
	f, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		if err2, ok := err.(*os.PathError); ok && err2.Err == syscall.ENOSPC {
			return nil, nil, fmt.Errorf("pty: open /dev/ptmx: pty limit reached (see /proc/sys/kernel/pty/max): %w", err)
		}
		return nil, nil, fmt.Errorf("pty: open /dev/ptmx: %w", err)
	}
	m := &Master{f: f}
	if m.rc, err = f.SyscallConn(); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("pty: %w", err)
	}
	var slaveFd int
	err = m.control(func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return fmt.Errorf("unlockpt: %w", err)
		}
		// TIOCGPTPEER opens the slave through the master: no path lookup, no race.
		sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER,
			uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
		if errno != 0 {
			return fmt.Errorf("TIOCGPTPEER: %w", errno)
		}
		slaveFd = int(sfd)
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: r, Col: c})
	})
	if err != nil {
		if slaveFd > 0 {
			unix.Close(slaveFd)
		}
		f.Close()
		return nil, nil, fmt.Errorf("pty: %w", err)
	}
	// A plain blocking file for the slave: it is only handed to a child.
	slave := os.NewFile(uintptr(slaveFd), "/dev/pts/peer")
	return m, slave, nil
}

// control runs fn on the master's fd without taking it off the netpoller.
func (m *Master) control(fn func(fd int) error) error {
	var ferr error
	if err := m.rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func (m *Master) setSize(rows, cols int) error {
	r, c, err := clampSize(rows, cols)
	if err != nil {
		return err
	}
	return m.control(func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: r, Col: c})
	})
}

func (m *Master) size() (rows, cols int, err error) {
	err = m.control(func(fd int) error {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err == nil {
			rows, cols = int(ws.Row), int(ws.Col)
		}
		return err
	})
	return rows, cols, err
}

func (m *Master) attrs() (a Attrs, err error) {
	err = m.control(func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil {
			return fmt.Errorf("tcgetattr: %w", err)
		}
		a = Attrs{
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
		}
		return nil
	})
	return a, err
}

func (m *Master) setFlowControl(on bool) error {
	return m.control(func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		if err != nil {
			return fmt.Errorf("tcgetattr: %w", err)
		}
		if on {
			t.Iflag |= unix.IXON
		} else {
			t.Iflag &^= unix.IXON
		}
		if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
			return fmt.Errorf("tcsetattr: %w", err)
		}
		return nil
	})
}

func (m *Master) foregroundPgrp() (pgrp int, err error) {
	err = m.control(func(fd int) error {
		pgrp, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		return err
	})
	return pgrp, err
}

func (m *Master) signal(sig syscall.Signal) error {
	return m.control(func(fd int) error {
		if err := unix.IoctlSetInt(fd, unix.TIOCSIG, int(sig)); err != nil {
			return fmt.Errorf("TIOCSIG: %w", err)
		}
		return nil
	})
}
