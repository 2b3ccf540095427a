package session

import (
	"time"
)

// waitBackoff is how long a loop waits between two looks at whether the program waits
// for input while it prints nothing (nothing else would wake it when a program blocks
// silently): the first look is at once when output stops, then these gaps, the last one
// repeating. A look costs a few /proc reads (tens of µs).
var waitBackoff = [...]time.Duration{
	200 * time.Microsecond, 500 * time.Microsecond, time.Millisecond,
	2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
}

// waitSpin is how long the looks go on without a timer right after output stops: the
// program is usually microseconds from blocking then (a REPL prints its prompt, then
// reads), and a timer fires no sooner than about a millisecond here.
const waitSpin = 250 * time.Microsecond

// waitSpinRunning is how long the spin goes on, past waitSpin, while the thread the last
// try found running still runs: a program that has printed its prompt and is still on
// its way to the read (python3 sets up its terminal and signal handlers in between, and
// on a loaded machine waits for a CPU to do it) is seen at once when it blocks, not at a
// timed look a millisecond or more later. The spin pauses in spinPause between checks,
// so a thread that runs for long costs one read of its state per pause.
const waitSpinRunning = 2 * time.Millisecond

// lookSchedule paces the waiting-for-input looks of a loop that also waits for output
// (collect, and a wait's watch): a look at once when output stops, more looks without a
// timer for waitSpin, then looks spaced by waitBackoff while nothing is printed. C wakes
// the loop when the next look is due. Owned by that loop; stop releases the timer.
type lookSchedule struct {
	timer   *time.Timer
	C       <-chan time.Time
	lastOut time.Time // when output last arrived (or the loop began)
	next    time.Time // when the next look is due
	step    int       // index in waitBackoff of the gap after the next failed look
	printed bool      // output arrived since the schedule began
}

func newLookSchedule(now time.Time) *lookSchedule {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &lookSchedule{timer: t, C: t.C, lastOut: now, next: now}
}

func (l *lookSchedule) stop() { l.timer.Stop() }

// output notes that output arrived at now: the next look is due at once. During a flood
// a look stops at its first, cheap step (output not settled: one poll(2)).
func (l *lookSchedule) output(now time.Time) {
	l.step, l.next, l.lastOut, l.printed = 0, now, now, true
}

// outputLine notes output that arrived at now and ended a line (its last byte a
// newline): the next look is timed, waitBackoff[0] later, with no spin. A program at a
// prompt has printed the prompt, an unfinished line; output that ends a line is most
// often not the last of an answer (the terminal's echo of the typed line, then the
// result, then the prompt), and a look then would walk /proc beside a program that is
// still working (the spin, beside a REPL computing, was most of the looks' cost). A
// program that waits after a complete line (cat, read without a prompt) is seen at the
// timed look.
func (l *lookSchedule) outputLine(now time.Time) {
	l.step, l.next, l.lastOut, l.printed = 1, now.Add(waitBackoff[0]), now, true
}

// typed notes that the call typed input at now, before any output: the first look is
// timed, waitBackoff[0] later, instead of at once. The program has not answered yet; a
// look so soon finds it reading the input or working on it.
func (l *lookSchedule) typed(now time.Time) {
	l.step, l.next, l.lastOut = 1, now.Add(waitBackoff[0]), now
}

// streaming notes output that arrived during a flood (a collect in flood mode): it counts
// for how long output has been quiet, but the looks keep their back-off instead of
// starting over at once. Starting over looked at every wake, and a wake when the reader
// has paused for a moment (broadcast.Hub.Flush) finds output settled and walks /proc.
func (l *lookSchedule) streaming(now time.Time) { l.lastOut, l.printed = now, true }

// look calls try, with how long output has been quiet, when a look is due, and reports
// whether it said yes. Right after output a no is tried again after a short pause
// (spinPause), for up to waitSpin while settled holds (no output came in the meantime);
// a nil settled (a flood: output has not stopped) means no such tries, and so does a
// schedule that has seen no output yet: a program that has printed nothing is usually
// still starting (python3 takes ~30 ms), and spinning on /proc beside it slowed its
// start by ~0.3 ms on two CPUs. Within the spin, a try is skipped while running (nil:
// never) says the thread the last try found running still runs (one read of its state,
// where a try costs four system calls or more): that try would say no again. Past
// waitSpin the spin goes on, up to waitSpinRunning, only while that thread runs, and
// tries once more when it stops. Unless it reports yes, it sets C for the next look.
func (l *lookSchedule) look(now time.Time, settled, running func() bool, try func(quiet time.Duration) bool) bool {
	if !now.Before(l.next) {
		ok := try(now.Sub(l.lastOut))
		if !ok && l.step == 0 && l.printed && settled != nil {
			ran := false // the last check found the thread still running
			for end, last := now.Add(waitSpin), now.Add(waitSpinRunning); !ok && settled(); {
				spinPause()
				t := time.Now()
				if !t.Before(last) {
					break
				}
				if running != nil && running() {
					ran = true
					continue
				}
				if !t.Before(end) && !ran {
					break
				}
				ran = false
				ok = try(time.Since(l.lastOut))
			}
		}
		if ok {
			return true
		}
		l.next = now.Add(waitBackoff[l.step])
		l.step = min(l.step+1, len(waitBackoff)-1)
	}
	l.timer.Reset(time.Until(l.next))
	return false
}
