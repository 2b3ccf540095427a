package session

import "time"

// The waiting-for-input detector's common part: what one look concludes. How a look is
// made is per platform (probeWait in waiting_linux.go and waiting_portable.go).

// waitVerdict is the outcome of one look at the terminal's foreground.
type waitVerdict uint8

const (
	waitNo     waitVerdict = iota // the program is doing something else (runs, prints, has input to read)
	waitYes                       // the kernel says the program waits for the terminal
	waitMaybe                     // the kernel cannot tell: require quiet output
	waitUnsure                    // not yet known: look again later (a first look, a query being answered)
)

// waitingForInput reports whether the program in the foreground is blocked reading the
// terminal and its output has settled, and how that was decided (Result.WaitDetection).
// quietFor is how long no output has arrived. Called with collectMu held; it only reads
// /proc and polls, and changes nothing but the detector's cache.
func (s *Session) waitingForInput(quietFor time.Duration) (bool, string) {
	v, method := s.lookVerdict(quietFor)
	return v == waitYes, method
}

// lookVerdict is waitingForInput with the reason for a no: waitNo when the program was
// seen doing something else, waitUnsure when the look could not tell yet. It never
// returns waitMaybe: that becomes waitYes after quietFor reaches waitQuiet, waitUnsure
// before.
func (s *Session) lookVerdict(quietFor time.Duration) (waitVerdict, string) {
	if s.writing.Load() > 0 {
		return waitNo, "" // our own input (or a query's answer) is on its way to the program
	}
	if s.scr != nil && s.scr.m.AnsweredTo() < s.hub.End() {
		// A terminal query in the output may not be answered yet: the program waits for
		// ptyhub's answer, not for the agent. (Once answered, the answer sits in writing
		// and then in the terminal's input queue, which the look below sees.)
		return waitUnsure, ""
	}
	switch v, method := s.probeWait(quietFor); v {
	case waitYes:
		return waitYes, method
	case waitMaybe:
		if quietFor >= waitQuiet {
			return waitYes, method
		}
		return waitUnsure, method
	case waitUnsure:
		return waitUnsure, ""
	}
	return waitNo, ""
}
