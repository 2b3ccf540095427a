package session

import (
	"testing"
	"time"
)

// TestLookSpinsOnlyAfterOutput: a failed first look is tried again at once (the spin)
// only once output arrived; before any output one try is made and the next look is timed.
func TestLookSpinsOnlyAfterOutput(t *testing.T) {
	settled := func() bool { return true }
	l := newLookSchedule(time.Now())
	defer l.stop()
	tries := 0
	if l.look(time.Now(), settled, nil, func(time.Duration) bool { tries++; return tries > 1 }) {
		t.Fatal("a look before any output spun until the program waited")
	}
	if tries != 1 {
		t.Fatalf("a look before any output tried %d times, want 1", tries)
	}
	// After output the spin runs while time allows; a descheduled test can miss the
	// 250 µs window once, not every time.
	for range 20 {
		l.output(time.Now())
		tries = 0
		if l.look(time.Now(), settled, nil, func(time.Duration) bool { tries++; return tries > 1 }) {
			return
		}
	}
	t.Fatal("a failed look right after output was never tried again at once")
}

// TestLookStreamingKeepsBackOff: output that arrives during a flood counts for quiet but
// does not make the next look due at once, as output otherwise does.
func TestLookStreamingKeepsBackOff(t *testing.T) {
	start := time.Now()
	l := newLookSchedule(start)
	defer l.stop()
	tries := 0
	no := func(time.Duration) bool { tries++; return false }
	l.look(start, nil, nil, no) // fails: the next look is waitBackoff[0] later
	now := start.Add(waitBackoff[0] / 2)
	l.streaming(now)
	var quiet time.Duration
	l.look(now, nil, nil, func(q time.Duration) bool { quiet = q; return no(q) })
	if tries != 1 {
		t.Fatalf("a look was made before its back-off passed (%d tries)", tries)
	}
	later := start.Add(waitBackoff[0])
	l.look(later, nil, nil, func(q time.Duration) bool { quiet = q; return no(q) })
	if tries != 2 || quiet != later.Sub(now) {
		t.Fatalf("the due look: %d tries, quiet %v, want 2 and %v", tries, quiet, later.Sub(now))
	}
	l.output(later)
	l.look(later, nil, nil, no)
	if tries != 3 {
		t.Fatal("output outside a flood did not make a look due at once")
	}
}

// TestLookAfterCompleteLineIsTimed: output that ends a line (the echo of the typed line,
// a result before the prompt) does not make a look due at once and is not spun on; the
// look comes waitBackoff[0] later. Output that leaves a line unfinished (a prompt) still
// makes it due at once.
func TestLookAfterCompleteLineIsTimed(t *testing.T) {
	t.Parallel()
	d, looks, clock := lookDecider(t, false)
	r := runningRound()
	r.fresh, r.lineEnded = true, true
	d.decide(r)
	if *looks != 0 {
		t.Fatalf("output that ended a line was looked at %d times at once, want 0", *looks)
	}
	*clock = clock.Add(waitBackoff[0])
	d.decide(runningRound())
	if *looks != 1 {
		t.Fatalf("the timed look after a complete line: %d looks, want 1", *looks)
	}
	r.lineEnded = false
	d.decide(r)
	if *looks != 2 {
		t.Fatalf("output that left a line unfinished: %d looks, want 2", *looks)
	}
}

// TestLookAfterTypingIsTimed: a collect that follows the call's own input makes its
// first look waitBackoff[0] later, not at once: the program has not answered yet.
func TestLookAfterTypingIsTimed(t *testing.T) {
	t.Parallel()
	start := time.Now()
	l := newLookSchedule(start)
	defer l.stop()
	l.typed(start)
	tries := 0
	no := func(time.Duration) bool { tries++; return false }
	l.look(start, func() bool { return true }, nil, no)
	if tries != 0 {
		t.Fatalf("a look was made at once after typing (%d tries)", tries)
	}
	l.look(start.Add(waitBackoff[0]), func() bool { return true }, nil, no)
	if tries != 1 {
		t.Fatalf("the timed look after typing: %d tries, want 1 (no spin before any output)", tries)
	}
}

// TestLookSpinSkipsTriesWhileRunning: within the spin, no try is made while running says
// the thread the last try found running still runs; the next try comes once it stops.
func TestLookSpinSkipsTriesWhileRunning(t *testing.T) {
	settled := func() bool { return true }
	l := newLookSchedule(time.Now())
	defer l.stop()
	// A descheduled test can miss the 250 µs window once, not every time.
	for range 20 {
		l.output(time.Now())
		tries, checks := 0, 0
		running := func() bool { checks++; return checks <= 3 }
		ok := l.look(time.Now(), settled, running, func(time.Duration) bool { tries++; return tries > 1 })
		if tries > 2 || tries == 2 && checks < 4 {
			t.Fatalf("%d tries after %d checks of the running thread: a try was made while it ran", tries, checks)
		}
		if ok {
			return
		}
	}
	t.Fatal("the spin never tried again once the running thread stopped")
}

// TestLookSpinFollowsARunningThreadPastWaitSpin: a thread the last try found running
// that runs on past waitSpin keeps the spin going (up to waitSpinRunning), and the try
// made once it stops says yes within the same look, not at a timed look later.
func TestLookSpinFollowsARunningThreadPastWaitSpin(t *testing.T) {
	settled := func() bool { return true }
	l := newLookSchedule(time.Now())
	defer l.stop()
	// A descheduled test can miss the window once, not every time.
	for range 20 {
		start := time.Now()
		l.output(start)
		// The thread runs for waitSpin, and is still seen running at the first check
		// after that; it has stopped at the next one.
		late := 0
		running := func() bool {
			if time.Since(start) < waitSpin {
				return true
			}
			late++
			return late == 1
		}
		tries := 0
		ok := l.look(start, settled, running, func(time.Duration) bool {
			tries++
			return late > 1
		})
		if ok {
			return
		}
		if late > 2 || tries > 1 {
			t.Fatalf("%d checks after waitSpin, %d tries: the spin went on or tried while the thread ran", late, tries)
		}
	}
	t.Fatal("the spin ended while the thread the last try found running still ran, and never tried once it stopped")
}
