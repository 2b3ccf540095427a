//go:build linux && !ptyhub_portable

package session

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/reaper"
)

// heldExits waits for the exit of every held leader of the process's sessions (a held
// leader stays a zombie until released, so its pid is not reused meanwhile) with one
// goroutine for all of them: an epoll set of their pidfds, itself waited for through
// the runtime's poller, instead of a goroutine per session.
var heldExits heldWatch

// heldWatch is an epoll set of held leaders' pidfds. Its goroutine (run) is owned by
// the watch and runs while the set exists: the first add makes the set and starts it,
// and it ends once the set has stayed empty for heldLinger (its leaders exited, or
// their sessions stopped watching), when the set is closed. Sessions started one after
// another (an agent's commands) share one set and one goroutine instead of each making
// and closing its own.
type heldWatch struct {
	mu    sync.Mutex // guards the fields below; a leaf of the lock order (doc.go)
	ep    *os.File   // the epoll fd; nil while there is no set
	waits map[int32]heldEntry
	gen   int32       // the last entry's generation
	idle  *time.Timer // closes the set once it stayed empty for heldLinger (closeIdle)
}

// heldLinger is how long the set of held leaders stays open once empty. A variable for
// tests.
var heldLinger = 30 * time.Second

// heldEntry is a watched pidfd's session. gen tells it from an earlier entry of the same
// fd number (closed and reused while the goroutine held an event for it): the epoll
// event carries it.
type heldEntry struct {
	s   *Session
	gen int32
}

// add puts s's leader's pidfd into the set: once the leader exited, the watch's goroutine
// takes it out, closes it and tells s (Session.tellEnd).
func (w *heldWatch) add(fd int, s *Session) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ep == nil {
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return err
		}
		if err := unix.SetNonblock(ep, true); err != nil {
			unix.Close(ep)
			return err
		}
		w.ep = os.NewFile(uintptr(ep), "epoll")
		w.waits = map[int32]heldEntry{}
		go w.run(w.ep)
	}
	w.gen++
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd), Pad: w.gen}
	rc, err := w.ep.SyscallConn()
	if err == nil {
		rc.Control(func(ep uintptr) { err = unix.EpollCtl(int(ep), unix.EPOLL_CTL_ADD, fd, &ev) })
	}
	if err != nil {
		w.closeIfEmptyLocked()
		return err
	}
	w.waits[int32(fd)] = heldEntry{s, w.gen}
	return nil
}

// remove takes s's pidfd out of the set and closes it, if it is still there (a fired
// one was removed by the goroutine).
func (w *heldWatch) remove(fd int, s *Session) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waits[int32(fd)].s != s {
		return
	}
	w.dropLocked(int32(fd))
	w.closeIfEmptyLocked()
}

// dropLocked takes fd out of the set and closes it. w.mu must be held.
func (w *heldWatch) dropLocked(fd int32) {
	delete(w.waits, fd)
	if rc, err := w.ep.SyscallConn(); err == nil {
		rc.Control(func(ep uintptr) { unix.EpollCtl(int(ep), unix.EPOLL_CTL_DEL, int(fd), nil) })
	}
	unix.Close(int(fd))
}

// closeIfEmptyLocked arranges for the epoll fd to be closed once the set has stayed
// empty for heldLinger, which ends the goroutine's wait. w.mu must be held.
func (w *heldWatch) closeIfEmptyLocked() {
	if w.ep == nil || len(w.waits) != 0 {
		return
	}
	if w.idle == nil {
		w.idle = time.AfterFunc(heldLinger, w.closeIdle)
	} else {
		w.idle.Reset(heldLinger) // a timer that already ran runs again
	}
}

// closeIdle closes the set if it is (still, or again) empty.
func (w *heldWatch) closeIdle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ep != nil && len(w.waits) == 0 {
		w.closeLocked()
	}
}

// closeLocked closes the epoll fd, which ends the goroutine's wait. w.mu must be held.
func (w *heldWatch) closeLocked() {
	w.ep.Close()
	w.ep, w.waits = nil, nil
}

// run is the watch's goroutine for the epoll fd ep: it tells each session whose leader
// exited. It ends when ep is closed (the set stayed empty for heldLinger, or could
// not be waited for).
func (w *heldWatch) run(ep *os.File) {
	rc, err := ep.SyscallConn()
	if err != nil {
		w.abandon(ep)
		return
	}
	var evs [16]unix.EpollEvent
	for {
		n := 0
		if err := rc.Read(func(fd uintptr) bool {
			n, _ = unix.EpollWait(int(fd), evs[:], 0)
			return n > 0
		}); err != nil {
			w.abandon(ep) // nothing left to abandon when ep was closed for being empty
			return
		}
		var fired []*Session
		w.mu.Lock()
		if w.ep != ep {
			w.mu.Unlock()
			return
		}
		for _, ev := range evs[:max(n, 0)] {
			if e, ok := w.waits[ev.Fd]; ok && e.gen == ev.Pad {
				w.dropLocked(ev.Fd)
				fired = append(fired, e.s)
			}
		}
		w.closeIfEmptyLocked()
		w.mu.Unlock()
		for _, s := range fired {
			s.tellEnd(endZombie, reaper.Exit{})
		}
	}
}

// abandon empties the set of ep, which cannot be waited for: each session in it asks the
// reaper instead (Release waits for the exit). Nothing is left when ep was closed.
func (w *heldWatch) abandon(ep *os.File) {
	var left []*Session
	w.mu.Lock()
	if w.ep == ep {
		for fd, e := range w.waits {
			w.dropLocked(fd)
			left = append(left, e.s)
		}
		w.closeLocked()
	}
	w.mu.Unlock()
	for _, s := range left {
		s.tellEnd(endAsk, reaper.Exit{})
	}
}

// watchHeld starts waiting for the held leader's exit (heldExits); when that cannot be
// done, the exit path is started at once and asks the reaper (Release waits for the
// exit).
func (s *Session) watchHeld() {
	fd, err := unix.PidfdOpen(s.pid, unix.PIDFD_NONBLOCK)
	if err == nil {
		if err = heldExits.add(fd, s); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		s.tellEnd(endAsk, reaper.Exit{})
		return
	}
	s.heldFD.Store(int32(fd) + 1)
}

// unwatchHeld ends the wait of watchHeld, if it still runs (the reaper died first).
func (s *Session) unwatchHeld() {
	if fd := s.heldFD.Load(); fd > 0 {
		heldExits.remove(int(fd-1), s)
	}
}
