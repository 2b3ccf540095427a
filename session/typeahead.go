package session

import (
	"bytes"
	"time"
)

// maxTypeaheadHold bounds how long input waits for the program to read the terminal.
const maxTypeaheadHold = 5 * time.Second

// typeaheadBackoff is how long the writer waits between two looks at whether the
// program reads the terminal yet; the last gap repeats.
var typeaheadBackoff = []time.Duration{
	200 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond,
}

// holdTypeahead keeps input typed ahead of the program away from the terminal until the
// program reads it. The terminal echoes input the moment it is written if echo is on
// then, so a password written before the program turned echo off (`read -s`, getpass,
// sudo) would be echoed into the output and recorded as visible input. Held input is
// written once any of these holds:
//
//   - echo is off (the program turned it off: nothing is echoed, and the recorder keeps
//     only the length);
//   - the terminal's foreground group is blocked reading the terminal, or its wait cannot
//     be told (see readerAhead); echo is on for reading, so the input was meant to show;
//   - the input holds a character the terminal turns into a signal (^C, ^\, ^Z with ISIG
//     on): an interrupt is never held back;
//   - maxTypeaheadHold passed (a program that reads in a way the detector does not see
//     still gets its input), or this platform has no detector.
//
// It runs in the writer goroutine, before the input is noted and written; the caller's
// Write returns at its yield with the bytes still queued, as for a program that does not
// read. It returns false if the session ended meanwhile. When it returns true, at holds
// the terminal's flags of the look that let the input go (if it read them).
func (s *Session) holdTypeahead(job *writeJob, at *termAttrs) bool {
	var timer *time.Timer
	start := time.Now()
	for i := 0; ; i++ {
		*at = termAttrs{} // each look reads the flags afresh
		if s.mayWrite(job, start, at) {
			return true
		}
		d := typeaheadBackoff[min(i, len(typeaheadBackoff)-1)]
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-s.quit:
			return false
		case <-timer.C:
		}
	}
}

// mayWrite reports whether job's input may be written now, by the rules of
// holdTypeahead, for a job held since start. Only the writer (whoever holds writerOn)
// calls it: it uses the writer's cache, s.ahead. It reads the terminal's flags through
// at (see termAttrs), where the job's start finds them.
func (s *Session) mayWrite(job *writeJob, start time.Time, at *termAttrs) bool {
	if !s.tty || !waitDetectionAvailable || len(job.data) == 0 {
		return true
	}
	a, err := at.get(s)
	if err != nil || !a.Echo {
		return true
	}
	if a.Signals && (hasCC(job.data, a.Intr) || hasCC(job.data, a.Quit) || hasCC(job.data, a.Susp)) {
		return true
	}
	if s.ahead == nil {
		s.ahead = new(waitState)
	}
	ok := !s.readerAhead(s.ahead) || time.Since(start) >= maxTypeaheadHold
	// The look at the program took a while, and a program that turned echo off and
	// blocked to read a password meanwhile is what it let through: the input's start
	// reads the flags afresh.
	*at = termAttrs{}
	return ok
}

// hasCC reports whether data holds the control character c (0 means disabled).
func hasCC(data []byte, c byte) bool { return c != 0 && bytes.IndexByte(data, c) >= 0 }
