//go:build linux && !ptyhub_portable

package pty

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The slave Open returns is blocking, as a child's standard streams must be (the flag
// belongs to the file description the child shares), without a call of its Fd first;
// the master is non-blocking.
func TestOpenSlaveBlocking(t *testing.T) {
	m, tty, err := Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer tty.Close()
	rc, err := tty.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var nb bool
	var nbErr error
	rc.Control(func(fd uintptr) { nb, nbErr = nonblocking(int(fd)) })
	if nbErr != nil || nb {
		t.Errorf("slave non-blocking %v (%v), want blocking", nb, nbErr)
	}
	m.rc.Control(func(fd uintptr) { nb, nbErr = nonblocking(int(fd)) })
	if nbErr != nil || !nb {
		t.Errorf("master non-blocking %v (%v), want non-blocking", nb, nbErr)
	}
}

func nonblocking(fd int) (bool, error) {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return fl&unix.O_NONBLOCK != 0, err
}
