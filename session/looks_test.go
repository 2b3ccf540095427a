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
	if l.look(time.Now(), settled, func(time.Duration) bool { tries++; return tries > 1 }) {
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
		if l.look(time.Now(), settled, func(time.Duration) bool { tries++; return tries > 1 }) {
			return
		}
	}
	t.Fatal("a failed look right after output was never tried again at once")
}
