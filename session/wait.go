package session

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ptyhub/ptyhub/termtext"
)

// Defaults and limits of wait_sessions.
const (
	DefaultWaitTimeoutMs = 30_000
	MaxWaitTimeoutMs     = 600_000
)

// Events a wait counts (WaitRequest.Until); they are also the returned_because values of
// a WaitResult, besides BecauseDeadline and BecauseCancelled.
const (
	UntilExit            = BecauseExit
	UntilWaitingForInput = BecauseWaitingForInput
	UntilPattern         = BecausePattern
)

// WaitRequest is the input of wait_sessions.
type WaitRequest struct {
	SessionIDs      []string `json:"session_ids,omitempty" jsonschema:"sessions to wait on, by id or name (default: every session you started that is still running, or that ended without a result telling you)"`
	Until           []string `json:"until,omitempty" jsonschema:"the events that count, an array of strings from exit, waiting_for_input and pattern, e.g. [\"exit\"] (default: all of them; pattern needs wait_for)"`
	WaitFor         string   `json:"wait_for,omitempty" jsonschema:"regular expression (Go RE2 syntax) matched per line, as grep does (^ and $ at the line's start and end; the unfinished last line counts): return when a new line of one of the sessions matches it"`
	TimeoutMs       *int64   `json:"timeout_ms,omitempty" jsonschema:"how long to wait at most, in ms (default 30000, max 600000); 0 looks once and returns"`
	MaxOutputTokens *int64   `json:"max_output_tokens,omitempty" jsonschema:"token budget of the returned output (default 10000)"`
}

// SessionLine is the one-line state of a session a wait did not return for.
type SessionLine struct {
	SessionID string `json:"session_id"`
	Name      string `json:"name,omitempty"`
	State     string `json:"state"`
	// Line says how it stands: state, time since its last output, its last line.
	Line string `json:"line"`
}

// WaitResult is what wait_sessions returns: the session that had an event (its fields
// as a write_stdin poll of it would give: its new output, its state, and why the wait
// returned), or returned_because "deadline" with no session_id when none had one in
// time; and one line on each other session waited on.
type WaitResult struct {
	Result
	Others []SessionLine `json:"others"`
}

// waitEvents is the set of events a wait counts. Waiting for input counts when it is
// news: by default with output the agent has not read or after the program was seen busy
// during this watch; with heard only after the session's mark moved or it was seen busy;
// with always at once.
type waitEvents struct {
	exit, waiting, pattern, always bool
	// heard, when set, is the session's mark when the watcher last heard it wait: waiting
	// counts only once the mark moved, or the program was seen busy.
	heard *watchMark
	// mark, when set, receives the session's mark taken before the look that found it
	// waiting.
	mark *watchMark
	// looked, when set, is called with the verdict of each look (tests).
	looked func(waitVerdict)
}

func parseUntil(until []string, pattern bool) (waitEvents, error) {
	if len(until) == 0 {
		return waitEvents{exit: true, waiting: true, pattern: pattern}, nil
	}
	var ev waitEvents
	for _, u := range until {
		switch u {
		case UntilExit:
			ev.exit = true
		case UntilWaitingForInput:
			ev.waiting = true
		case UntilPattern:
			if !pattern {
				return ev, &ArgError{Arg: "until", Problem: fmt.Sprintf(" %q needs a pattern: give ", u), Other: "wait_for"}
			}
			ev.pattern = true
		default:
			return ev, argError("until", fmt.Sprintf(" takes exit, waiting_for_input and pattern, not %q", u))
		}
	}
	return ev, nil
}

// waitTimeout validates timeout_ms; nil means the default, larger values are clamped.
func waitTimeout(ms *int64) (time.Duration, string, error) {
	if ms == nil {
		return DefaultWaitTimeoutMs * time.Millisecond, "", nil
	}
	if *ms < 0 {
		return 0, "", argError("timeout_ms", fmt.Sprintf(" must be 0 or more (got %d ms)", *ms))
	}
	if *ms > MaxWaitTimeoutMs {
		return MaxWaitTimeoutMs * time.Millisecond, fmt.Sprintf("timeout_ms %d clamped to the maximum %d", *ms, MaxWaitTimeoutMs), nil
	}
	return time.Duration(*ms) * time.Millisecond, "", nil
}

// waitSet resolves the sessions of a wait: the given ids, or every session of this
// client that still runs or has ended without the client having been told (a result of
// its own that reported the exit — exec_command, write_stdin, wait_sessions, or the
// kill_session that ended it — told it). Without ids and with no such session, it
// returns an empty set.
func (c *Client) waitSet(ids []string) ([]*Session, error) {
	if len(ids) > 0 {
		var out []*Session
		for _, id := range ids {
			s, err := c.lookup(id)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out, nil
	}
	c.m.mu.Lock()
	var mine []*Session
	for _, s := range c.m.sessions {
		s.mu.Lock()
		if s.owner == c {
			mine = append(mine, s)
		}
		s.mu.Unlock()
	}
	c.m.mu.Unlock()
	var out []*Session
	for _, s := range mine {
		s.waitSpawned() // one this client is starting now
		s.mu.Lock()
		reported := s.reported
		s.mu.Unlock()
		if !s.isExited() || !reported {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// Wait blocks until the first of the sessions has an event that counts — it exits, it
// waits for input (having printed or done something the agent has not seen), or its new
// output matches the pattern — or the timeout passes, or ctx ends (then it returns
// ctx's error and the sessions carry on). The session that had the event is then
// collected as a poll of it would be: its output from the agent cursor, within the
// budget, moving the cursor. Nothing of the other sessions is consumed.
func (c *Client) Wait(ctx context.Context, req WaitRequest) (*WaitResult, error) {
	if err := req.CheckSizes(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	timeout, twarn, err := waitTimeout(req.TimeoutMs)
	if err != nil {
		return nil, err
	}
	budget, bwarn := tokenBudget(req.MaxOutputTokens)
	re, err := compilePattern(req.WaitFor)
	if err != nil {
		return nil, err
	}
	events, err := parseUntil(req.Until, re != nil)
	if err != nil {
		return nil, err
	}
	set, err := c.waitSet(req.SessionIDs)
	if err != nil {
		return nil, err
	}
	warns := appendNonEmpty(nil, twarn, bwarn)
	if len(set) == 0 {
		r := &WaitResult{Result: Result{ReturnedBecause: BecauseNoSessions, ChunkID: chunkID()}, Others: []SessionLine{}}
		r.Notices = c.notices(nil, warns)
		r.WallTimeMs = float64(time.Since(t0).Microseconds()) / 1000
		return r, nil
	}
	for _, s := range set {
		s.begin()
	}
	defer func() {
		for _, s := range set {
			s.end()
		}
	}()

	type event struct {
		s       *Session
		because string
	}
	wctx, cancel := context.WithCancel(ctx)
	fired := make(chan event, len(set))
	var wg sync.WaitGroup
	for _, s := range set {
		// One watcher per session: owned by this call, ends when wctx ends.
		wg.Go(func() {
			if why := s.watch(wctx, events, re); why != "" {
				fired <- event{s, why}
			}
		})
	}
	timer := time.NewTimer(timeout)
	var ev event
	select {
	case ev = <-fired:
	case <-timer.C:
		// A look at once (timeout 0) still reports an event that was there at once.
		select {
		case ev = <-fired:
		default:
		}
	case <-ctx.Done():
	}
	timer.Stop()
	cancel()
	wg.Wait()
	if ev.s == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := &WaitResult{Result: Result{ReturnedBecause: BecauseDeadline, ChunkID: chunkID()}}
		r.Others = c.lines(set, nil)
		r.Notices = c.notices(nil, warns)
		r.WallTimeMs = float64(time.Since(t0).Microseconds()) / 1000
		return r, nil
	}
	s := ev.s
	deadline := time.Now()
	if ev.because == BecauseExit {
		// Its output ends with the exit: collect returns as soon as it is drained.
		deadline = deadline.Add(exitDrainQuiet + time.Second)
	}
	col := s.collect(ctx, collectOpts{deadline: deadline, budget: budget})
	if col.because != BecauseExit {
		col.because = ev.because
	}
	r := &WaitResult{Result: *c.result(s, t0, col, warns)}
	if r.Completion != nil && r.Completion.LogPath == "" {
		// A wait is long anyway: name the log, once whole.
		r.Completion = s.completion(true)
	}
	r.Others = c.lines(set, s)
	return r, nil
}

// lines describes each session of set but skip in one line.
func (c *Client) lines(set []*Session, skip *Session) []SessionLine {
	out := []SessionLine{}
	now := time.Now()
	for _, s := range set {
		if s != skip {
			out = append(out, s.stateLine(now))
		}
	}
	return out
}

// stateLine is s in one line: "running 2m, last output 3s ago: Compiling foo" or
// "exited with code 1 4s ago: FAIL".
func (s *Session) stateLine(now time.Time) SessionLine {
	state, code, sig, _, timedOut := s.exitFields()
	l := SessionLine{SessionID: strconv.Itoa(s.id), State: state, Name: s.nameOf()}
	var b strings.Builder
	if state == StateRunning {
		fmt.Fprintf(&b, "running for %s", Age(now.Sub(s.started)))
		if last := s.lastOutputAt(); !last.IsZero() {
			fmt.Fprintf(&b, ", last output %s ago", Age(now.Sub(last)))
		} else {
			b.WriteString(", no output yet")
		}
	} else {
		fmt.Fprintf(&b, "ended %s ago: %s", Age(now.Sub(s.endedAt())),
			endedPhrase(Ended{ExitCode: code, Signal: sig, TimedOut: timedOut}))
	}
	if s.cursorBehind() {
		b.WriteString(", unread output")
	}
	if last := s.lastLine(); last != "" {
		b.WriteString(": ")
		b.WriteString(last)
	}
	l.Line = b.String()
	return l
}

// watch blocks until s has an event that counts and returns it (BecauseExit,
// BecauseWaitingForInput or BecausePattern), or returns "" when ctx ends. It reads the
// session's output from the agent cursor with its own converter and changes nothing the
// agent's calls use, so a watch that does not fire consumes nothing.
//
// Waiting for input counts only when it is news to the agent: the session has output the
// agent has not read, or it was seen doing something else during this wait.
func (s *Session) watch(ctx context.Context, ev waitEvents, re *regexp.Regexp) string {
	s.collectMu.Lock()
	off := s.cursor
	s.collectMu.Unlock()
	d := &decider{exit: ev.exit}
	var conv termtext.Converter
	var buf, text []byte
	if ev.pattern && re != nil {
		d.lm = &lineMatcher{re: re}
		buf = make([]byte, 32<<10)
	}
	if ev.waiting && s.tty && waitDetectionAvailable {
		d.looks = newLookSchedule(time.Now())
		defer d.looks.stop()
		d.settled = func() bool { return s.hub.End() == off }
		d.look = func(quiet time.Duration) (bool, string) { return s.watchLook(ev, d, quiet), "" }
	}
	read := func() round {
		r := round{pending: conv.Pending}
		if d.lm == nil { // only the offset matters
			if end := s.hub.End(); end != off {
				off, r.fresh = end, true
			}
			r.eof = s.hub.Closed()
			return r
		}
		for {
			n, missed, err := s.hub.ReadAt(buf, off)
			if missed > 0 {
				off += missed
				conv = termtext.Converter{}
			}
			if n > 0 {
				off += int64(n)
				r.fresh = true
				text = conv.Write(text[:0], buf[:n])
				d.feed(text)
			}
			if err == io.EOF {
				r.eof = true
				return r
			}
			if n == 0 {
				return r
			}
		}
	}
	because, _ := s.follow(ctx, d, read, s.hub.Notify)
	if because == BecauseCancelled {
		return ""
	}
	return because
}

// watchLook is a watch's look at whether s waits for input: yes only when that is news
// (see waitEvents), with the session's mark stored in ev.mark. The mark of a yes: the
// inputs written before the look (one written after it is news later) and the output
// end after it (a yes means the output had settled, so the end is where the prompt
// ends). A no (the program seen busy) makes a later yes news.
func (s *Session) watchLook(ev waitEvents, d *decider, quiet time.Duration) bool {
	mark := s.markNow()
	v, unread := s.lookWaiting(quiet)
	if v == waitYes {
		mark.output = s.hub.End()
	}
	if ev.looked != nil {
		ev.looked(v)
	}
	if v == waitNo {
		d.busy = true
	}
	var news bool
	if ev.heard != nil {
		news = d.busy || mark != *ev.heard
	} else {
		news = ev.always || unread || d.busy
	}
	if v == waitYes && news && ev.mark != nil {
		*ev.mark = mark
	}
	return v == waitYes && news
}

// lookWaiting looks once whether s waits for input, with output the agent has not read
// allowed (lookVerdict), and says whether there is such output. A look is skipped
// (waitUnsure) while a call of the agent is collecting from s: that call will see it.
func (s *Session) lookWaiting(quietFor time.Duration) (v waitVerdict, unread bool) {
	if !s.collectMu.TryLock() {
		return waitUnsure, false
	}
	defer s.collectMu.Unlock()
	s.settledAnyCursor = true
	v, _ = s.lookVerdict(quietFor)
	s.settledAnyCursor = false
	return v, s.cursor < s.hub.End()
}

// Text renders a wait result: which session and why (as a write_stdin result of it),
// then one line per other session.
func (r *WaitResult) Text() string { return r.TextIn(ToolWords) }

// TextIn is Text in an interface's words.
func (r *WaitResult) TextIn(w Words) string {
	var b strings.Builder
	if r.SessionID == "" {
		fmt.Fprintf(&b, "Wall time: %.4f seconds\n", r.WallTimeMs/1000)
		if r.ReturnedBecause == BecauseNoSessions {
			b.WriteString("Nothing to wait for: none of your sessions is running, and you have been told of every exit; start one, or give session_ids\n")
		} else {
			b.WriteString("No session exited, waited for input or matched before the timeout\n")
		}
		r.Notices.writeText(&b)
	} else {
		fmt.Fprintf(&b, "Session %s: %s\n", r.SessionID, becausePhrase(r.ReturnedBecause))
	}
	if len(r.Others) > 0 {
		b.WriteString("Other sessions:\n")
		for _, o := range r.Others {
			name := ""
			if o.Name != "" {
				name = " (" + o.Name + ")"
			}
			fmt.Fprintf(&b, "  %s%s: %s\n", o.SessionID, name, oneLine(o.Line, 200))
		}
	}
	if r.SessionID != "" {
		b.WriteString(r.Result.TextIn(w))
	}
	return b.String()
}

func becausePhrase(because string) string {
	switch because {
	case BecauseExit:
		return "exited"
	case BecauseWaitingForInput:
		return "waits for input"
	case BecausePattern:
		return "output matched the pattern"
	}
	return because
}
