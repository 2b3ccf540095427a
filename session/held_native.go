//go:build linux && !ptyhub_portable

package session

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/reaper"
)

// awaitHeld waits for a held leader to exit and returns its status, read from /proc
// without a round trip through the reaper (the leader stays a zombie until released, so
// its pid cannot be reused meanwhile). ok is false when that did not work; dead is set
// when the reaper died first.
func (s *Session) awaitHeld(exit <-chan reaper.Exit) (ws syscall.WaitStatus, ok bool, dead *reaper.Exit) {
	fd, err := unix.PidfdOpen(s.pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return 0, false, nil
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return 0, false, nil
	}
	// The pidfd becomes readable when the process exits; closing it (the reaper died)
	// wakes the wait. This goroutine ends with the wait.
	waited := make(chan struct{})
	deadCh := make(chan reaper.Exit, 1)
	go func() {
		select {
		case e := <-exit:
			deadCh <- e
			f.Close()
		case <-waited:
		}
	}()
	rc.Read(func(fd uintptr) bool {
		n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0
	})
	close(waited)
	f.Close()
	select {
	case e := <-deadCh:
		return 0, false, &e
	default:
	}
	ws, ok = reaper.ExitStatusOf(s.pid)
	return ws, ok, nil
}
