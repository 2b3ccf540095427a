package session

import (
	"context"
	"io"
	"regexp"
	"time"

	"github.com/ptyhub/ptyhub/internal/bufpool"
	"github.com/ptyhub/ptyhub/termtext"
	"github.com/ptyhub/ptyhub/truncate"
)

// patternWindow is how much recent text wait_for is matched against on each wake.
const patternWindow = 8 << 10

const (
	// waitQuiet is how long output must have been quiet before a waitMaybe verdict (the
	// kernel could not tell, see waiting_kernel.go) counts as waiting for input.
	waitQuiet = 500 * time.Millisecond
)

// collectBufs holds the collects' 32 KiB read buffers (a few: one per collect running).
var collectBufs = bufpool.New(32<<10, 4)

// collectOpts say when a collect returns.
type collectOpts struct {
	deadline time.Time
	budget   int
	pattern  *regexp.Regexp // matched per line (lineMatcher)
	// echo lists the lines of this call's input whose terminal echo the pattern must not
	// match (echoLines).
	echo [][]byte
	// needNews: waiting for input counts only once output arrived in this call (an empty
	// poll waits for news; a program that already waited when the call began is no news).
	needNews bool
	// shellFrom: with an integrated shell, the collect returns once the shell's prompt
	// ends at an offset from shellFrom on (0 or -1: from the cursor where the collect began),
	// as waiting for input decided by the shell (shell.go).
	shellFrom int64
	// shellKernel: the prompt mark alone does not end the collect; the general
	// waiting-for-input detection must agree (more typed lines may still be unread).
	shellKernel bool
	// typed: the call typed input just before (lookSchedule.typed).
	typed bool
	// from, when set, makes the collect read from that offset with a read position of
	// its own (a write by someone other than the session's owner, Client.Write): the
	// owner's position, converter and line state are left as they were.
	from *int64
}

// collected is the outcome of a collect.
type collected struct {
	because  string
	trunc    truncate.Result
	missed   int64
	from     int64 // the cursor when the collect began
	next     int64
	finished bool // the stream ended and everything was converted
	// waitMethod says how waiting for input was decided (Result.WaitDetection).
	waitMethod string
	// foreign: read with a position of its own (collectOpts.from); the owner's facts
	// (typed input, a reported exit) are not consumed.
	foreign bool
}

// collect reads from the agent cursor until the program exits (and its output is
// drained), the pattern matches new text, the program waits for input, the deadline
// passes, or ctx is done — whichever comes first (the follow loop and its decider).
// Memory is bounded by the budget, not by the output (truncate.Stream).
func (s *Session) collect(ctx context.Context, o collectOpts) collected {
	s.collectMu.Lock()
	defer s.collectMu.Unlock()
	if o.from != nil {
		cursor, conv, lineFrom := s.cursor, s.conv, s.lineFrom
		s.cursor, s.conv, s.lineFrom = *o.from, termtext.Converter{}, *o.from
		defer func() { s.cursor, s.conv, s.lineFrom = cursor, conv, lineFrom }()
	}
	bp := collectBufs.Get()
	defer collectBufs.Put(bp)
	st := truncate.NewStream(o.budget, len(*bp), &s.conv, &s.lineFrom)
	d := s.collectDecider(o)
	if d.lm != nil {
		st.NoFlood() // the pattern needs the text of every read
	}
	res := collected{from: s.cursor, foreign: o.from != nil}
	if d.looks != nil {
		defer d.looks.stop()
		// The looks of one collect read the same few /proc files again and again (the
		// tries right after a prompt), and so do the next call's at the same prompt:
		// through descriptors kept past the collect while the program waits there.
		s.wait.pr.Keep()
		defer func() { s.keepProbeFiles(res.because) }()
	}
	eof := false
	read := func() round {
		fresh, end, last := s.readStream(st, d, *bp, &res.missed)
		eof = eof || end
		return round{fresh: fresh, lineEnded: fresh && last == '\n', eof: eof, flood: st.Flooding(), pending: s.conv.Pending}
	}
	notify := func() <-chan struct{} {
		// In flood mode the collector is woken per batch of output or when the output
		// pauses (broadcast.Hub.NotifyBatch), not per read: a wake costs more than the
		// work of one 4 KiB chunk. While the program runs and the looks' timer paces the
		// loop (every waitBackoff's last gap at most), only per batch
		// (broadcast.Hub.NotifyBoundary): the reader finds the terminal empty now and
		// then in a flood (~15k times a GiB), and a wake at each of those pauses cost a
		// thread wake-up and a round for a few KiB; a pause that lasts is seen at the next
		// look, which in a flood comes no sooner anyway (lookSchedule.streaming), and the
		// exit ends the wait (follow). Not with a shell whose prompt ends the collect
		// (atPrompt), which a pause's wake sees at once.
		if st.Flooding() {
			if d.looks != nil && d.atPrompt == nil && !s.isExited() {
				return s.hub.NotifyBoundary(s.cursor)
			}
			return s.hub.NotifyBatch(s.cursor)
		}
		return s.hub.Notify()
	}
	res.because, res.waitMethod = s.follow(ctx, d, read, notify)
	if res.because == BecausePattern {
		s.noteMatched(o.pattern.String())
	}
	res.finished = eof && s.isExited()
	res.trunc = st.Result(s.cursor, res.finished)
	res.next = s.cursor
	return res
}

// probeFilesKept is how long the waiting-for-input detector's /proc descriptors stay
// open after a collect that ended with the program waiting (for input, or at the
// pattern), for the next call's looks at the same program; an agent's next turn
// usually comes within seconds.
const probeFilesKept = 10 * time.Second

// keepProbeFiles decides, at the end of a collect that looked (collectMu held), what
// becomes of the detector's descriptors kept during it: they stay open for
// probeFilesKept when the collect ended because the program waits for input or printed
// the pattern and it still runs — the next call will look at the same threads — and are
// closed now otherwise (a deadline, an exit, a cancelled call), so that an idle session
// whose program is not at a prompt holds none. A timer (s.probeTimer, made by the first
// collect that keeps them, stopped here when they are closed) closes them later, or at
// once when the program exits (waitExit fires it).
func (s *Session) keepProbeFiles(because string) {
	t := s.probeTimer.Load()
	if because != BecauseWaitingForInput && because != BecausePattern || s.isExited() {
		s.wait.pr.Release()
		if t != nil {
			t.Stop()
		}
		return
	}
	if t == nil {
		s.probeTimer.Store(time.AfterFunc(probeFilesKept, s.releaseProbeFiles))
		return
	}
	t.Reset(probeFilesKept)
}

// releaseProbeFiles closes the detector's kept descriptors (s.probeTimer's function, in
// the timer's goroutine). It waits for a collect running now, which re-arms the timer if
// it keeps them again; they are then closed a little early, which costs that collect's
// successor an open of each file.
func (s *Session) releaseProbeFiles() {
	s.collectMu.Lock()
	s.wait.pr.Release()
	s.collectMu.Unlock()
}

// collectDecider returns the rules of a collect with o: every exit ends it once the
// output is drained; the pattern, the shell's prompt, waiting for input (tty sessions
// only) and the deadline as o says.
func (s *Session) collectDecider(o collectOpts) *decider {
	d := &decider{exit: true, drain: true, needNews: o.needNews, deadline: o.deadline}
	if o.pattern != nil {
		d.lm = &lineMatcher{re: o.pattern, echo: o.echo}
	}
	shellFrom := o.shellFrom
	if shellFrom <= 0 {
		shellFrom = s.cursor
	}
	if s.sh != nil && !o.shellKernel {
		d.atPrompt = func() bool { return s.sh.AtPrompt(shellFrom, s.cursor) }
	}
	if s.tty && waitDetectionAvailable {
		d.looks = newLookSchedule(time.Now())
		if o.typed {
			d.looks.typed(time.Now())
		}
		d.settled = func() bool { return s.hub.End() == s.cursor }
		d.stillRuns = s.stillRuns
		d.look = func(quiet time.Duration) (bool, string) {
			ok, method := s.waitingForInput(quiet)
			if ok && s.sh != nil && s.sh.Prompting() {
				method = WaitShell
			}
			return ok, method
		}
	}
	return d
}

// readStream reads what the hub holds from the agent cursor into st, through buf, and
// moves the cursor past it; bytes that left memory are read from the transcript when it
// has them, else skipped and added to *missed. The text read goes to d's pattern. It
// reports whether anything was read, whether the output has ended, and the last byte
// read.
func (s *Session) readStream(st *truncate.Stream, d *decider, buf []byte, missed *int64) (fresh, eof bool, last byte) {
	for {
		n, gone, err := s.hub.ReadAt(buf, s.cursor)
		if gone > 0 { // left memory before we read it: the transcript may have it
			if an := s.readArchived(buf[:min(int64(len(buf)), gone)], s.cursor); an > 0 {
				n, gone, err = an, 0, nil
			}
		}
		if gone > 0 {
			*missed += gone
			s.cursor += gone
			st.Gap(s.cursor)
		}
		if n > 0 {
			// New bytes may only extend the unfinished line (a prompt): fresh all the same.
			d.feed(st.Write(buf[:n], s.cursor))
			s.cursor += int64(n)
			fresh, last = true, buf[n-1]
		}
		if err == io.EOF {
			return fresh, true, last
		}
		if n == 0 {
			return fresh, false, last
		}
	}
}
