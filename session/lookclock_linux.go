//go:build linux && !ptyhub_portable

package session

import (
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lookClock fires the timers of every follow loop of the process (lookTimer: its next
// look, its deadline) from one timerfd, waited for through the runtime's poller, instead
// of from Go timers.
//
// A Go timer set sooner than the runtime's poller sleeps (a look due in a millisecond, a
// 250 ms yield, while the poller waits for the terminal's next output with no nearer
// timer) makes the runtime break that sleep at once: an eventfd write and a wake of the
// thread in epoll_pwait, to sleep again with the nearer deadline. A look timer is set a
// few times a turn and seldom fires (the program's output comes first and moves it), so
// each turn paid that wake for nothing. Arming a timerfd is one timerfd_settime(2) and
// wakes nothing until it fires.
var lookClock timerClock

// lookClockLinger is how long the clock's timerfd and goroutine stay once no timer is
// set (a follow's next call usually comes within seconds).
const lookClockLinger = 30 * time.Second

// clockBase is the origin of the clock's times (monotonic ns since it).
var clockBase = time.Now()

// clockNow is the clock's time now: ns since clockBase, on the monotonic clock the
// timerfd counts on (CLOCK_MONOTONIC, as the runtime's).
func clockNow() int64 { return int64(time.Since(clockBase)) }

// timerClock is a set of lookTimers due at given times and a timerfd armed for the
// soonest. Its goroutine (run) is owned by the clock and runs while the timerfd exists:
// the first timer set makes the timerfd and starts it, and it ends once no timer was set
// for lookClockLinger (the timerfd, armed for that moment, fires with none set), when it
// closes the timerfd. When the timerfd cannot be made, set says so and the timer falls
// back to a Go timer.
type timerClock struct {
	linger time.Duration // lookClockLinger unless a test sets it; set before first use

	mu     sync.Mutex    // guards the fields below and the timers' when and i; a leaf of the lock order (doc.go)
	f      *os.File      // the timerfd; nil while there is none
	done   chan struct{} // closed when f's goroutine ends (for tests)
	fd     int           // f's descriptor (used under mu, while f is open)
	timers []*lookTimer
	armed  int64 // the clock time the timerfd is armed for; 0: not armed
	idle   int64 // when the last timer was taken out (the linger counts from it)
}

// lookTimer wakes one follow loop at a time it set (its next look, its deadline): C
// receives once the time given to reset has come. Owned by that loop: reset and stop
// are called by it alone; the clock's goroutine only fires it. A stale wake (a fire just
// before a reset) is possible and harmless: the loop finds the look not due yet and
// sets the timer again.
type lookTimer struct {
	clock *timerClock
	c     chan struct{}
	C     <-chan struct{}
	when  int64 // the clock time it is due; guarded by clock.mu
	i     int   // its index in clock.timers; -1: not set. Guarded by clock.mu
	// fallback is the Go timer used instead once the clock could not make its timerfd.
	fallback *time.Timer
}

func newLookTimer() *lookTimer { return lookClock.newTimer() }

// newTimer returns a timer of c, not set.
func (c *timerClock) newTimer() *lookTimer {
	ch := make(chan struct{}, 1)
	return &lookTimer{clock: c, c: ch, C: ch, i: -1}
}

// fire sends the timer's wake, unless one is waiting already.
func (t *lookTimer) fire() {
	select {
	case t.c <- struct{}{}:
	default:
	}
}

// drain takes a wake that came before the timer was set anew.
func (t *lookTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}

// clockMinDelay is how soon after it is set a timer fires at the soonest, as the
// runtime's timers did (its poller sleeps in whole milliseconds, so a Go timer set for
// 0.2 ms fired after ~1 ms). The looks' schedule was tuned with them: a look 0.2 ms after
// a line of output or the call's input, while a REPL still computes its answer, made
// 0.3–0.8 more rounds and looks a turn, and looks 0.2 ms apart beside a starting program
// more looks per exec.
const clockMinDelay = time.Millisecond

// resetAt sets the timer to fire at at, or clockMinDelay from now if that is later
// (replacing its time if it was set). Side effect:
// at most one timerfd_settime(2), when the soonest time of the clock changes; a timer
// set again for the same time (a loop's rounds while its next look stays due at the
// same moment, as in a flood) changes nothing.
func (t *lookTimer) resetAt(at time.Time) {
	t.drain()
	if t.fallback != nil {
		t.fallback.Reset(time.Until(at))
		return
	}
	if !t.clock.set(t, max(int64(at.Sub(clockBase)), clockNow()+int64(clockMinDelay))) {
		t.fallback = time.AfterFunc(time.Until(at), t.fire)
	}
}

// stop unsets the timer; a wake already sent is dropped.
func (t *lookTimer) stop() {
	if t.fallback != nil {
		t.fallback.Stop()
	} else {
		t.clock.remove(t)
	}
	t.drain()
}

// set puts t in the clock, due at when, and arms the timerfd if t is now the soonest.
// It reports false when the clock has no timerfd and cannot make one.
func (c *timerClock) set(t *lookTimer, when int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil && !c.openLocked() {
		return false
	}
	t.when = when
	if t.i < 0 {
		t.i = len(c.timers)
		c.timers = append(c.timers, t)
	}
	c.armLocked()
	return true
}

// remove takes t out of the clock, if it is set, and arms the timerfd for the soonest of
// the others (or for the linger's end when none is left).
func (c *timerClock) remove(t *lookTimer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.i < 0 {
		return
	}
	c.takeLocked(t)
	c.armLocked()
}

// takeLocked takes t out of the set (t.i ≥ 0). c.mu must be held.
func (c *timerClock) takeLocked(t *lookTimer) {
	last := len(c.timers) - 1
	c.timers[t.i] = c.timers[last]
	c.timers[t.i].i = t.i
	c.timers[last] = nil
	c.timers = c.timers[:last]
	t.i, t.when = -1, 0
	if last == 0 {
		c.idle = clockNow()
	}
}

// armLocked arms the timerfd for the soonest timer, or, with none set, for the end of
// the linger; it calls timerfd_settime(2) only when that time changed. A time moved
// later is armed too, not left to fire early and be armed then: a REPL's turn moves its
// look timer at its echo and at its answer, and an early fire (when the answer comes
// late, as on a loaded host) costs a wake of the clock's goroutine where arming costs
// one system call. c.mu must be held.
func (c *timerClock) armLocked() {
	want := c.idle + int64(c.lingerFor())
	if len(c.timers) > 0 {
		want = c.timers[0].when
		for _, t := range c.timers[1:] {
			want = min(want, t.when)
		}
	}
	if want == c.armed {
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(want-clockNow(), 1))}
	if err := unix.TimerfdSettime(c.fd, 0, &spec, nil); err != nil {
		c.armed = 0 // tried again at the next change
		return
	}
	c.armed = want
}

// openLocked makes the timerfd and starts the goroutine that waits for it. c.mu must be
// held.
func (c *timerClock) openLocked() bool {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "timerfd") // non-blocking: read through the poller
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return false
	}
	c.f, c.fd, c.armed, c.idle, c.done = f, fd, 0, clockNow(), make(chan struct{})
	go c.run(f, rc)
	return true
}

// lingerFor is how long the timerfd stays with no timer set.
func (c *timerClock) lingerFor() time.Duration {
	if c.linger > 0 {
		return c.linger
	}
	return lookClockLinger
}

// run is the clock's goroutine for the timerfd f: each time it fires, it fires the
// timers due and arms it for the next. It ends, closing f, once the timerfd fired with
// no timer set for lookClockLinger, or when f cannot be read.
func (c *timerClock) run(f *os.File, rc syscall.RawConn) {
	var buf [8]byte
	for {
		err := rc.Read(func(fd uintptr) bool {
			_, err := unix.Read(int(fd), buf[:])
			return err != unix.EAGAIN // EAGAIN: not fired (or armed anew since): wait
		})
		if err != nil {
			c.abandon(f)
			return
		}
		if !c.fired(f) {
			return
		}
	}
}

// abandon closes f, which could not be read, and fires every timer set: their loops
// look, and set them anew on a new timerfd.
func (c *timerClock) abandon(f *os.File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != f {
		return
	}
	for len(c.timers) > 0 {
		t := c.timers[0]
		c.takeLocked(t)
		t.fire()
	}
	c.closeLocked()
}

// closeLocked closes the timerfd, whose goroutine is ending. c.mu must be held.
func (c *timerClock) closeLocked() {
	c.f.Close()
	close(c.done)
	c.f, c.fd, c.done = nil, -1, nil
}

// fired fires the timers due and arms the timerfd for the next; it reports false once
// it closed f (the linger passed with no timer set), which ends run.
func (c *timerClock) fired(f *os.File) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != f {
		return false
	}
	now := clockNow()
	c.armed = 0
	for i := 0; i < len(c.timers); {
		if t := c.timers[i]; t.when <= now {
			c.takeLocked(t) // moves the last timer to i
			t.fire()
			continue
		}
		i++
	}
	if len(c.timers) == 0 && now-c.idle >= int64(c.lingerFor()) {
		c.closeLocked()
		return false
	}
	c.armLocked()
	return true
}
