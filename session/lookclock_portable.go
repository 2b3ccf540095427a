//go:build !linux || ptyhub_portable

package session

import "time"

// lookTimer wakes one follow loop at a time it set (its next look, its deadline): C
// receives once the time given to reset has come. Owned by that loop: reset and stop
// are called by it alone. Here a Go timer (Linux's build fires it from one timerfd). A stale
// wake (a fire just before a reset) is possible and harmless: the loop finds the look
// not due yet and sets the timer again.
type lookTimer struct {
	c chan struct{}
	C <-chan struct{}
	t *time.Timer
}

func newLookTimer() *lookTimer {
	c := make(chan struct{}, 1)
	l := &lookTimer{c: c, C: c}
	l.t = time.AfterFunc(time.Hour, l.fire)
	l.t.Stop()
	return l
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

// resetAt sets the timer to fire at at (replacing its time if it was set).
func (t *lookTimer) resetAt(at time.Time) {
	t.drain()
	t.t.Reset(time.Until(at))
}

// stop unsets the timer; a wake already sent is dropped.
func (t *lookTimer) stop() {
	t.t.Stop()
	t.drain()
}
