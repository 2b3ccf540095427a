package session

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"sync"
	"time"
	"unicode/utf8"

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

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

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
// passes, or ctx is done — whichever comes first. Memory is bounded by the
// budget, not by the output.
func (s *Session) collect(ctx context.Context, o collectOpts) collected {
	s.collectMu.Lock()
	defer s.collectMu.Unlock()
	if o.from != nil {
		cursor, conv, lineFrom := s.cursor, s.conv, s.lineFrom
		s.cursor, s.conv, s.lineFrom = *o.from, termtext.Converter{}, *o.from
		defer func() { s.cursor, s.conv, s.lineFrom = cursor, conv, lineFrom }()
	}

	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var text []byte
	coll := truncate.NewCollector(o.budget)
	coll.CountedElsewhere() // cnt counts the original tokens (SetOriginal below)
	var cnt tokenCounter
	var lm *lineMatcher
	if o.pattern != nil {
		lm = &lineMatcher{re: o.pattern, echo: o.echo}
	}
	matched := false
	looked := false // the pattern has been tried on what was there when the call began
	res := collected{from: s.cursor, foreign: o.from != nil}
	if o.shellFrom <= 0 {
		o.shellFrom = s.cursor
	}
	// A flood (the result is already being cut and no pattern needs the text): only the
	// last rawKeep bytes can still reach the tail, so they are kept raw and converted at
	// the end; what passes before them is accounted for raw (truncate.SkipRaw).
	var rawTail []byte
	var rawTailFrom int64
	skipped := false
	rawKeep := min(max(4*truncate.SideBytes(o.budget), 2*len(buf)), 8<<20)
	timer := time.NewTimer(time.Until(o.deadline))
	defer timer.Stop()
	eof := false
	news := false // output arrived in this call

	// Looks at whether the program waits for input (tty sessions only), paced by looks;
	// pollC wakes collect for the next one.
	detect := s.tty && waitDetectionAvailable
	var looks *lookSchedule
	var pollC <-chan time.Time
	if detect {
		looks = newLookSchedule(time.Now())
		defer looks.stop()
		pollC = looks.C
	}

	for {
		// In flood mode the collector is woken per batch of output or when the output
		// pauses (broadcast.Hub.NotifyBatch), not per read: a wake costs more than the
		// work of one 4 KiB chunk.
		var notify <-chan struct{}
		if rawTail != nil {
			notify = s.hub.NotifyBatch(s.cursor)
		} else {
			notify = s.hub.Notify()
		}
		fresh := false
		first := !looked
		looked = true
		for {
			n, missed, err := s.hub.ReadAt(buf, s.cursor)
			if missed > 0 { // left memory before we read it: the transcript may have it
				if an := s.readArchived(buf[:min(int64(len(buf)), missed)], s.cursor); an > 0 {
					n, missed, err = an, 0, nil
				}
			}
			if missed > 0 {
				res.missed += missed
				s.cursor += missed
				s.lineFrom = s.cursor
			}
			if n > 0 {
				cnt.write(buf[:n])
			}
			if n > 0 && rawTail == nil && o.pattern == nil && coll.Overflowing() {
				text = s.conv.Flush(text[:0])
				coll.Write(writeReleased(&s.conv, coll, text, s.cursor), min(s.lineFrom, s.cursor), s.cursor)
				s.conv = termtext.Converter{}
				rawTail, rawTailFrom = make([]byte, 0, 2*rawKeep), s.cursor
			}
			if n > 0 && rawTail != nil {
				rawTail = append(rawTail, buf[:n]...)
				s.cursor += int64(n)
				fresh = true
				if len(rawTail) > 2*rawKeep-len(buf) {
					drop := len(rawTail) - rawKeep
					coll.SkipRaw(rawTail[:drop], rawTailFrom, rawTailFrom+int64(drop))
					rawTailFrom += int64(drop)
					rawTail = rawTail[:copy(rawTail, rawTail[drop:])]
					skipped = true
				}
			} else if n > 0 {
				text = s.convert(coll, text, buf[:n], s.cursor)
				s.cursor += int64(n)
				fresh = true // new bytes may only extend the unfinished line (a prompt)
				if lm != nil && len(text) > 0 && !matched {
					matched = lm.feed(text)
				}
			}
			if err == io.EOF {
				eof = true
				break
			}
			if n == 0 {
				break
			}
		}
		if s.isExited() {
			// With nothing left of the session, EOF is certain and near: wait for it, so
			// no output is left behind however slowly the reader is scheduled. Only a
			// survivor still holding the terminal (being killed aside) can delay it; then
			// return once output has been quiet for a moment after the exit.
			s.mu.Lock()
			quietFor := time.Since(s.exitedAt)
			held := len(s.survivors) > 0
			s.mu.Unlock()
			if eof || held && quietFor >= exitDrainQuiet && !fresh {
				res.because = BecauseExit
				break
			}
			if held {
				timer.Reset(max(exitDrainQuiet-quietFor, time.Millisecond))
			}
		}
		if lm != nil && (matched || (fresh || first) && lm.matchPending(s.conv.Pending())) {
			res.because = BecausePattern
			s.noteMatched(o.pattern.String())
			break
		}
		if eof {
			// The stream has ended but the exit is not known yet: the hub's channel is
			// always ready now, so wait for the exit (or the deadline) instead of
			// spinning on it, and with the terminal closed nothing can wait for input.
			notify = nil
		}
		if fresh {
			news = true
		}
		if s.sh != nil && !eof && !s.isExited() && !o.shellKernel && s.sh.AtPrompt(o.shellFrom, s.cursor) {
			res.because, res.waitMethod = BecauseWaitingForInput, WaitShell
			break
		}
		if detect && !eof && !s.isExited() && (news || !o.needNews) {
			now := time.Now()
			if fresh && rawTail != nil {
				looks.streaming(now)
			} else if fresh {
				looks.output(now)
			}
			var method string
			settled := func() bool { return s.hub.End() == s.cursor }
			if rawTail != nil {
				settled = nil // flood mode: the output goes on, and a spin would cost the reader
			}
			if looks.look(now, settled, func(quiet time.Duration) bool {
				var ok bool
				ok, method = s.waitingForInput(quiet)
				return ok
			}) {
				res.because = BecauseWaitingForInput
				res.waitMethod = method
				if s.sh != nil && s.sh.Prompting() {
					res.waitMethod = WaitShell
				}
				break
			}
		}
		if !time.Now().Before(o.deadline) {
			res.because = BecauseDeadline
			break
		}
		exited := s.exited
		if s.isExited() {
			exited = nil
		}
		select {
		case <-notify:
		case <-exited:
		case <-timer.C:
			if !s.isExited() {
				timer.Reset(time.Until(o.deadline))
			}
		case <-pollC:
		case <-ctx.Done():
			res.because = BecauseCancelled
			goto done
		}
	}
done:
	if rawTail != nil {
		if skipped {
			// The kept part starts mid-stream: convert from a line start, so no escape
			// sequence or character is cut in two (the cut lands on a line anyway).
			cut := tailStart(rawTail, 2*truncate.SideBytes(o.budget))
			coll.SkipRaw(rawTail[:cut], rawTailFrom, rawTailFrom+int64(cut))
			rawTailFrom += int64(cut)
			rawTail = rawTail[cut:]
		}
		s.lineFrom = rawTailFrom
		for len(rawTail) > 0 {
			k := min(len(rawTail), 4<<10)
			text = s.convert(coll, text, rawTail[:k], rawTailFrom)
			rawTailFrom += int64(k)
			rawTail = rawTail[k:]
		}
	}
	from := s.lineFrom
	if eof && s.isExited() {
		text = s.conv.Close(text[:0])
		res.finished = true
	} else {
		text = s.conv.Flush(text[:0])
	}
	coll.Write(writeReleased(&s.conv, coll, text, s.cursor), from, s.cursor)
	s.lineFrom = s.cursor
	res.trunc = coll.Result()
	if res.trunc.Truncated {
		// The count of the bytes themselves: not of how reads split them, nor of the
		// budget, nor of whether this collect went into flood mode.
		res.trunc.SetOriginal(max(cnt.tokens(), 1))
	}
	res.next = s.cursor
	return res
}

// writeReleased writes to coll the blank lines that conv held back and released at the
// start of text, its latest text for the raw bytes up to end, each tagged with the raw
// line it came from, and returns the rest of text.
func writeReleased(conv *termtext.Converter, coll *truncate.Collector, text []byte, end int64) []byte {
	for _, r := range conv.Released() {
		coll.Write(text[:1], end-r[0], end-r[1])
		text = text[1:]
	}
	return text
}

// plain reports whether text is raw as it is, but for a final "\r\n" that became "\n".
func plain(text, raw []byte) bool {
	if len(raw) == len(text)+1 && bytes.HasSuffix(raw, []byte("\r\n")) && bytes.HasSuffix(text, []byte("\n")) {
		raw, text = raw[:len(raw)-2], text[:len(text)-1]
	}
	return bytes.Equal(text, raw)
}

// tailStart returns where to start converting raw, the kept end of a flood, so that at
// least keep bytes remain: after its first newline when that leaves enough, else at a
// character start that splits no escape sequence (the tail then starts mid-line, as a
// 20 MB line without newlines must).
func tailStart(raw []byte, keep int) int {
	limit := len(raw) - keep
	if limit <= 0 {
		return 0
	}
	if i := bytes.IndexByte(raw, '\n'); i >= 0 && i < limit {
		return i + 1
	}
	cut := limit
	for cut < len(raw) && !utf8.RuneStart(raw[cut]) {
		cut++
	}
	if i := bytes.LastIndexByte(raw[max(0, cut-256):cut], 0x1b); i >= 0 {
		cut = max(0, cut-256) + i // start with the whole sequence
	}
	return cut
}

// convert turns the raw bytes at [start, start+len(raw)) into text for coll and returns
// it (in dst's storage), keeping the agent cursor's converter and lineFrom (see
// convertLines).
func (s *Session) convert(coll *truncate.Collector, dst, raw []byte, start int64) []byte {
	return convertLines(&s.conv, coll, dst, raw, start, &s.lineFrom)
}

// convertLines turns the raw bytes at [start, start+len(raw)) into text with conv and
// writes it to coll one raw line at a time, each tagged with the raw bytes it came from:
// from *lineFrom (where the unfinished line began: the text of a line finished later is
// tagged with every byte it came from) to the end of the line, and a blank line that the
// converter held back with its own line. So the raw range of a cut names exactly the
// lines whose text was cut. It returns the text (in dst's storage).
func convertLines(conv *termtext.Converter, coll *truncate.Collector, dst, raw []byte, start int64, lineFrom *int64) []byte {
	dst = dst[:0]
	for len(raw) > 0 {
		n := len(raw)
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			n = i + 1
		}
		end := start + int64(n)
		k := len(dst)
		dst = conv.Write(dst, raw[:n])
		if text := writeReleased(conv, coll, dst[k:], end); len(text) > 0 {
			if *lineFrom >= start && plain(text, raw[:n]) {
				coll.WriteExact(text, start, end)
			} else {
				coll.Write(text, min(*lineFrom, start), end)
			}
		}
		if conv.AtLineStart() {
			*lineFrom = end
		} else if len(dst) > k {
			*lineFrom = start
		}
		raw, start = raw[n:], end
	}
	return dst
}
