package session

import (
	"context"
	"time"
)

// The follow loop of collect and watch: each round reads what is new of the session's
// output, takes the decisions that may end the loop (in that order: exit, pattern, the
// shell's prompt, waiting for input, deadline), and sleeps until something may have
// changed (output, the exit, the next look, a timer, or ctx). The decisions are the
// decider's and depend only on what a round saw, so they are tested without a terminal.

// decider holds the rules that end a follow and what they carry from round to round.
// Owned by one follow.
type decider struct {
	// exit: the session's exit ends the follow. With drain, only once the output is
	// drained (eof), or, while survivors hold the terminal, once output was quiet for
	// exitDrainQuiet after the exit: with nothing left of the session, EOF is certain and
	// near, so no output is left behind however slowly the reader is scheduled.
	exit, drain bool
	// lm matches the pattern per line; nil: no pattern.
	lm *lineMatcher
	// atPrompt reports that an integrated shell's prompt was drawn (waiting for input
	// decided by the shell); nil: none.
	atPrompt func() bool
	// looks paces the looks at whether the program waits for input and look takes one
	// (yes, and the method that decided); nil looks: waiting for input is not looked at.
	// settled reports that the output has settled (no output since the round's read).
	// stillRuns (nil: none) reports that the thread the last look found running still
	// runs (lookSchedule.look).
	looks     *lookSchedule
	look      func(quiet time.Duration) (bool, string)
	settled   func() bool
	stillRuns func() bool
	// needNews: waiting for input counts only once output arrived in this follow.
	needNews bool
	// deadline ends the follow when it passes; zero: none.
	deadline time.Time
	// now is the clock (time.Now unless a test sets it).
	now func() time.Time

	matched bool // a complete line matched the pattern
	news    bool // output arrived in this follow
	busy    bool // output arrived after the first round: the program printed during it
}

// round is what one round of a follow saw.
type round struct {
	first bool // the first round: what was there when the follow began
	fresh bool // new output was read
	// lineEnded: the last byte of the fresh output is a newline (only collect tells;
	// see lookSchedule.outputLine).
	lineEnded bool
	eof       bool // the output has ended
	flood     bool // the output is read in flood mode: it has not stopped
	// exited reports whether the session's exit is recorded; exitQuiet, after an exit,
	// how long ago it was and whether survivors still hold the terminal.
	exited    func() bool
	exitQuiet func() (time.Duration, bool)
	// pending is the unfinished text a pattern is tried on (the converter's pending
	// text), asked only when a pattern is set and the round is first or fresh.
	pending func() []byte
}

// feed gives the pattern the text read in a round; it reports whether a complete line
// has matched so far.
func (d *decider) feed(text []byte) bool {
	if d.lm != nil && len(text) > 0 && !d.matched {
		d.matched = d.lm.feed(text)
	}
	return d.matched
}

// decide takes the round's decisions in order. It returns why the follow ends (and for
// waiting for input the method that decided), or "" and, when the exit waits for the
// output to be quiet, how soon to decide again (else 0).
func (d *decider) decide(r round) (because, method string, retry time.Duration) {
	if d.exit && r.exited() {
		if !d.drain {
			return BecauseExit, "", 0
		}
		quiet, held := r.exitQuiet()
		if r.eof || held && quiet >= exitDrainQuiet && !r.fresh {
			return BecauseExit, "", 0
		}
		if held {
			retry = max(exitDrainQuiet-quiet, time.Millisecond)
		}
	}
	if d.lm != nil && (d.matched || (r.fresh || r.first) && d.lm.matchPending(r.pending())) {
		return BecausePattern, "", 0
	}
	if r.fresh {
		d.news = true
		d.busy = d.busy || !r.first
	}
	if d.atPrompt != nil && !r.eof && !r.exited() && d.atPrompt() {
		return BecauseWaitingForInput, WaitShell, 0
	}
	if d.looks != nil && !r.eof && !r.exited() && (d.news || !d.needNews) {
		if ok, m := d.lookWaiting(r); ok {
			return BecauseWaitingForInput, m, 0
		}
	}
	if !d.deadline.IsZero() && !d.now().Before(d.deadline) {
		return BecauseDeadline, "", 0
	}
	return "", "", retry
}

// lookWaiting tells the look schedule about the round's output and takes a look if one
// is due. In flood mode output counts only for quiet, and no look spins (the output goes
// on, and a spin would cost the reader).
func (d *decider) lookWaiting(r round) (bool, string) {
	now := d.now()
	settled := d.settled
	switch {
	case r.fresh && r.flood:
		d.looks.streaming(now)
	case r.fresh && r.lineEnded:
		d.looks.outputLine(now)
	case r.fresh:
		d.looks.output(now)
	}
	if r.flood {
		settled = nil
	}
	var method string
	ok := d.looks.look(now, settled, d.stillRuns, func(quiet time.Duration) bool {
		var yes bool
		yes, method = d.look(quiet)
		return yes
	})
	return ok, method
}

// follow runs the loop on s until d decides, or ctx ends (BecauseCancelled). read reads
// what is new and returns what it saw (fresh, eof, flood and pending of a round); notify
// returns the channel that wakes the loop at the next output, taken before the read.
func (s *Session) follow(ctx context.Context, d *decider, read func() round, notify func() <-chan struct{}) (because, method string) {
	if d.now == nil {
		d.now = time.Now
	}
	var timer *time.Timer
	var timerC <-chan time.Time
	if !d.deadline.IsZero() {
		timer = time.NewTimer(time.Until(d.deadline))
		defer timer.Stop()
		timerC = timer.C
	}
	var pollC <-chan time.Time
	if d.looks != nil {
		pollC = d.looks.C
	}
	exitQuiet := func() (time.Duration, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return time.Since(s.exitedAt), len(s.survivors) > 0
	}
	// A round's decisions and its choice of what to wait for next see the exit as it was
	// once, at the round's start (sawExit): an exit recorded after the decisions looked
	// must still wake the loop through s.exited (with the output ended, nothing else
	// would).
	sawExit := false
	exitedSeen := func() bool { return sawExit }
	for first := true; ; first = false {
		// The exit is looked at once, here, before notify: a notify taken while the
		// program runs may wake only per batch (collect), and an exit after it must still
		// end the wait. Once the exit is seen its channel is always ready, so it is left
		// out: the round waits for the output's end or its quiet.
		exited := s.exited
		if sawExit = s.isExited(); sawExit {
			exited = nil
		}
		wake := notify()
		r := read()
		r.first, r.exited, r.exitQuiet = first, exitedSeen, exitQuiet
		because, method, retry := d.decide(r)
		if because != "" {
			return because, method
		}
		if retry > 0 && timer != nil {
			timer.Reset(retry)
		}
		if r.eof {
			// The stream has ended but the exit is not known yet (or does not end the
			// follow): the hub's channel is always ready now, so wait for the exit (or the
			// deadline) instead of spinning on it.
			wake = nil
		}
		select {
		case <-wake:
		case <-exited:
		case <-timerC:
			if !s.isExited() {
				timer.Reset(time.Until(d.deadline))
			}
		case <-pollC:
		case <-ctx.Done():
			return BecauseCancelled, ""
		}
	}
}
