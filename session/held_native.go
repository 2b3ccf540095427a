//go:build linux && !ptyhub_portable

package session

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/reaper"
)

// awaitHeld waits for a held leader to exit and returns its status, read from /proc
// without a round trip through the reaper (the leader stays a zombie until released, so
// its pid cannot be reused meanwhile). ok is false when that did not work; dead is set
// when the reaper died first. It runs in the exit waiter and starts no goroutine: the
// reaper's death wakes the wait through wakeHeld (the spawn's reaper.Spec.OnExit).
func (s *Session) awaitHeld(exit <-chan reaper.Exit) (ws syscall.WaitStatus, ok bool, dead *reaper.Exit) {
	fd, err := unix.PidfdOpen(s.pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return 0, false, nil
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	// Published before the exit channel is looked at: either wakeHeld finds the pidfd
	// (and ends its wait), or the reaper's death was sent before it, and is seen below.
	s.heldFD.Store(f)
	defer s.heldFD.Store(nil)
	select {
	case e := <-exit:
		return 0, false, &e
	default:
	}
	// The pidfd becomes readable when the process exits.
	rc.Read(func(fd uintptr) bool {
		n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0
	})
	select {
	case e := <-exit:
		return 0, false, &e
	default:
	}
	ws, ok = reaper.ExitStatusOf(s.pid)
	return ws, ok, nil
}

// wakeHeld ends awaitHeld's wait: the reaper died, so its exit channel has the news. It
// is the held spawn's reaper.Spec.OnExit; it does not block.
func (s *Session) wakeHeld() {
	if f := s.heldFD.Load(); f != nil {
		f.SetReadDeadline(time.Unix(1, 0)) // in the past: the pending read returns
	}
}
