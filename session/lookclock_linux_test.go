//go:build linux && !ptyhub_portable

package session

import (
	"testing"
	"time"
)

// waitFired fails the test unless t fires within a generous bound (a failure bound,
// not a timing assertion).
func waitFired(tb testing.TB, t *lookTimer, what string) {
	tb.Helper()
	select {
	case <-t.C:
	case <-time.After(10 * time.Second):
		tb.Fatalf("%s: the timer did not fire", what)
	}
}

// The clock fires each timer set once its time has come, from one timerfd; a stopped
// timer does not fire, and a timer set anew fires at its new time only.
func TestLookClockFires(t *testing.T) {
	c := &timerClock{linger: time.Millisecond}
	defer waitClockEnd(t, c)
	a, b, stopped := c.newTimer(), c.newTimer(), c.newTimer()
	stopped.resetAt(time.Now().Add(time.Millisecond))
	stopped.stop()
	a.resetAt(time.Now().Add(time.Hour))
	a.resetAt(time.Now().Add(time.Millisecond)) // sooner: the timerfd is armed anew
	b.resetAt(time.Now().Add(2 * time.Millisecond))
	waitFired(t, a, "a timer moved sooner")
	waitFired(t, b, "a second timer")
	c.mu.Lock()
	n := len(c.timers)
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d timers still set after both fired", n)
	}
	select {
	case <-stopped.C:
		t.Error("a stopped timer fired")
	default:
	}
	// A timer moved later (the timerfd armed anew for it) still fires, beside another.
	a.resetAt(time.Now().Add(time.Millisecond))
	b.resetAt(time.Now().Add(4 * time.Millisecond))
	a.resetAt(time.Now().Add(3 * time.Millisecond))
	waitFired(t, a, "a timer moved later")
	waitFired(t, b, "the other timer")
}

// The clock's goroutine and timerfd end once no timer was set for its linger, and the
// next timer set makes them anew.
func TestLookClockLinger(t *testing.T) {
	c := &timerClock{linger: time.Millisecond}
	l := c.newTimer()
	l.resetAt(time.Now().Add(time.Millisecond))
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	waitFired(t, l, "before the linger")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the clock's goroutine did not end after its linger")
	}
	c.mu.Lock()
	open := c.f != nil
	c.mu.Unlock()
	if open {
		t.Fatal("the timerfd is still open after the linger")
	}
	if l.fallback != nil {
		t.Fatal("the timer fell back to a Go timer")
	}
	l.resetAt(time.Now().Add(time.Millisecond))
	waitFired(t, l, "after the clock was made anew")
	l.stop()
	waitClockEnd(t, c)
}

// waitClockEnd waits for c's goroutine, if it runs, to end after its linger.
func waitClockEnd(tb testing.TB, c *timerClock) {
	tb.Helper()
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		tb.Error("the clock's goroutine did not end after its linger")
	}
}
