package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/pty"
	"github.com/ptyhub/ptyhub/termtext"
	"github.com/ptyhub/ptyhub/truncate"
)

func compilePattern(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, nil
	}
	if re := patterns.get(p); re != nil {
		return re, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, argError("wait_for", fmt.Sprintf(" is not a valid regular expression (Go RE2 syntax): %v", err))
	}
	patterns.put(p, re)
	return re, nil
}

// patterns keeps the wait_for patterns compiled lately: an agent sends the same prompt
// pattern turn after turn, and compiling it is most of what a pattern costs a call.
var patterns patternCache

// patternCache maps patterns to their compiled form, at most maxPatterns of them, each
// at most maxPatternLen bytes (longer ones are compiled each time). A *regexp.Regexp is
// safe for concurrent use, so one is shared by every call. Safe for concurrent use; the
// zero value is ready.
type patternCache struct {
	mu sync.Mutex
	m  map[string]*regexp.Regexp
}

const (
	maxPatterns   = 64
	maxPatternLen = 1 << 10
)

func (c *patternCache) get(p string) *regexp.Regexp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[p]
}

func (c *patternCache) put(p string, re *regexp.Regexp) {
	if len(p) > maxPatternLen {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*regexp.Regexp{}
	}
	if len(c.m) >= maxPatterns {
		for k := range c.m { // one out, any one: the set is small and rarely full
			delete(c.m, k)
			break
		}
	}
	c.m[p] = re
}

func chunkID() string {
	var b [3]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// begin marks a call in flight on s (it is never pruned meanwhile); end undoes it.
func (s *Session) begin() {
	s.mu.Lock()
	s.inFlight++
	s.lastUsed = time.Now()
	s.mu.Unlock()
}

func (s *Session) end() {
	s.mu.Lock()
	s.inFlight--
	s.lastUsed = time.Now()
	s.mu.Unlock()
}

// result builds the common part of a result after a collect.
func (c *Client) result(s *Session, t0 time.Time, col collected, warns []string) *Result {
	state, code, sig, core, timedOut := s.exitFields()
	if state == StateExited && col.because != BecauseExit && !col.finished {
		// It exited while this call returned for another reason, with output still to
		// read: report it as running, so the agent calls again and gets the rest with
		// the exit.
		state, code, sig, core, timedOut = StateRunning, nil, "", false, false
	}
	r := &Result{
		SessionID: strconv.Itoa(s.id), UUID: s.uuid, State: state, ExitCode: code,
		Signal: sig, CoreDumped: core, TimedOut: timedOut,
		ReturnedBecause: col.because, Output: col.trunc.Text, NextOffset: col.next,
		MissedBytes: col.missed, ChunkID: chunkID(), WaitDetection: col.waitMethod,
		Name: s.name,
	}
	if col.trunc.Truncated {
		n := col.trunc.OriginalTokens
		r.OriginalTokenCount = &n
		r.TruncatedRange = &[2]int64{col.trunc.CutFrom, col.trunc.CutTo}
	}
	if col.missed > 0 {
		warns = append(warns, fmt.Sprintf("%d bytes of output left memory before they were read", col.missed))
	}
	var skip *Session
	if state == StateExited {
		s.mu.Lock()
		if !col.foreign {
			s.reported = true
		}
		r.Survivors, r.SurvivorsMore = listSurvivors(s.survivors)
		r.Pruned = s.pruned
		if s.exitErr != nil {
			warns = append(warns, s.exitErr.Error())
		}
		r.DurationMs = float64(s.exitedAt.Sub(s.started).Microseconds()) / 1000
		s.mu.Unlock()
		skip = s
		// A result that carries the whole output does not wait for the recorder to finish
		// the log (about half a millisecond for a quick command): it names the log only
		// if it is already whole, and counts from memory.
		whole := col.from == 0 && col.missed == 0 && !col.trunc.Truncated && col.finished
		r.Completion = s.completion(!whole)
	} else if s.tty {
		if a, err := s.master.Attrs(); err == nil {
			r.PasswordPrompt = !a.Echo && a.Canonical
		}
	}
	if state == StateRunning && col.because == BecauseDeadline {
		// A stopped program prints nothing, so such a call runs to its deadline; only
		// then is the tree walked.
		if pid := s.stoppedForeground(); pid > 0 {
			warns = append(warns, fmt.Sprintf("process %d (%s) in the foreground is stopped (SIGSTOP or SIGTSTP) and nothing will continue it; send it SIGCONT to resume it", pid, proc.CommandLine(pid)))
		}
	}
	if !col.foreign {
		r.HumanInputBytes = s.takeHumanInput()
	}
	if !col.foreign {
		p, pending := s.transcriptProblem(state == StateExited || col.next > col.from)
		switch {
		case p != "" && !s.toldTranscript.Swap(true):
			warns = append(warns, "transcript not recorded: "+p+"; the output is in this result, and what memory holds of it can be read again")
		case pending && !s.toldPending.Swap(true):
			warns = append(warns, "transcript not recorded yet: its files were not created within "+s.m.recordWaitTime().String()+" (the state directory is slow or hung); a later result says if they cannot be")
		}
	}
	if r.OutputStopped = s.outputStopped(); r.OutputStopped {
		warns = append(warns, "output is stopped: a ^S (XOFF) was typed and the terminal has flow control on; send \u0011 (C-q) to resume")
	}
	r.Notices = c.notices(skip, warns)
	r.WallTimeMs = float64(time.Since(t0).Microseconds()) / 1000
	return r
}

// Exec starts a session and collects its output for the yield window.
func (c *Client) Exec(ctx context.Context, req ExecRequest) (*Result, error) {
	if err := req.CheckSizes(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if req.Host != "" {
		return nil, fmt.Errorf("%w: host %q: this session manager runs sessions only on its own machine (ptyhub mcp and the CLI reach other hosts)", ErrInvalid, req.Host)
	}
	yield, ywarn, err := yieldDuration(req.YieldTimeMs, DefaultExecYieldMs)
	if err != nil {
		return nil, err
	}
	budget, bwarn := tokenBudget(req.MaxOutputTokens)
	re, err := compilePattern(req.WaitFor)
	if err != nil {
		return nil, err
	}
	if err := checkName(req.Name); err != nil {
		return nil, err
	}
	if s := c.runningNamed(req.Name); s != nil {
		return c.execExisting(ctx, s, &req, t0, yield, re), nil
	}
	s, warns, err := c.m.start(&req, c)
	var taken *nameTaken
	if errors.As(err, &taken) {
		return c.execExisting(ctx, taken.s, &req, t0, yield, re), nil
	}
	if err != nil {
		return nil, err
	}
	warns = appendNonEmpty(warns, ywarn, bwarn)
	defer s.end() // start marked this call in flight on s
	var echo [][]byte
	if req.Stdin != "" || req.CloseStdin {
		data := []byte(req.Stdin)
		echo = s.echoOf(data, re)
		_, iw, err := s.input(data, req.CloseStdin)
		warns = append(warns, iw...)
		if err != nil {
			warns = append(warns, "stdin not written: "+err.Error())
		}
	}
	// The yield window opens once the program runs: a start that waited (the first one
	// of a manager starts the reaper, a re-exec of this binary that a loaded machine can
	// take seconds to run) must not use up the window before the program had a moment.
	col := s.collect(ctx, collectOpts{deadline: time.Now().Add(yield), budget: budget, pattern: re, echo: echo, shellFrom: -1})
	if req.Stdin != "" || req.CloseStdin {
		s.noteCollected()
	}
	r := c.result(s, t0, col, warns)
	r.Profile = s.profile
	return r, nil
}

// input queues data (and EOF) for the program. It returns the job to wait on (nil when
// nothing was queued) and warnings about input that was not queued. The caller collects
// the program's answer next, then calls noteCollected (the transcript's input event
// waits for that, see recorder.input).
//
// On a pipe session the control keys a terminal would act on act the same way: ^C sends
// SIGINT and ^\ SIGQUIT to the session's process group, in their place in the input;
// ^D closes stdin (what follows it is not written). A signal whose turn is held up by
// input the program is not reading is sent at once instead.
func (s *Session) input(data []byte, closeIn bool) (*writeJob, []string, error) {
	if s.tty && closeIn {
		a, err := s.master.Attrs()
		veof := byte(4)
		if err == nil && a.EOF != 0 {
			veof = a.EOF
		}
		// VEOF ends a partial line first; a second one is then the end of file.
		if endsMidLine(data) {
			data = append(data, veof)
		}
		data = append(data, veof)
		closeIn = false
	}
	var job *writeJob
	var warns []string
	for !s.tty && len(data) > 0 {
		i := bytes.IndexAny(data, "\x03\x1c\x04")
		if i < 0 {
			break
		}
		j := &writeJob{data: data[:i:i], done: make(chan error, 1)}
		switch data[i] {
		case 3:
			j.sig = syscall.SIGINT
		case 0x1c:
			j.sig = syscall.SIGQUIT
		default:
			j.closeIn = true
		}
		if j.sig != 0 && s.writing.Load() > 0 {
			if err := s.rp.Load().SignalGroup(s.uuid, j.sig); err == nil {
				j.sig = 0
			}
		}
		var err error
		if job, err = s.enqueueJob(j); err != nil {
			return nil, warns, err
		}
		data = data[i+1:]
		if j.closeIn {
			if len(data) > 0 {
				warns = append(warns, fmt.Sprintf("%d bytes after \\u0004 not written: it closed stdin", len(data)))
			}
			return job, warns, nil
		}
	}
	if len(data) == 0 && !closeIn {
		return job, warns, nil
	}
	// The caller (Exec, Write) collects next, and then calls noteCollected.
	job, err := s.enqueueJob(&writeJob{data: data, closeIn: closeIn, done: make(chan error, 1), collects: true})
	return job, warns, err
}

// Write types into a session, then collects.
func (c *Client) Write(ctx context.Context, req WriteRequest) (*Result, error) {
	if err := req.CheckSizes(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	s, err := c.lookup(req.SessionID)
	if err != nil {
		return nil, err
	}
	yield, ywarn, err := yieldDuration(req.YieldTimeMs, DefaultWriteYieldMs)
	if err != nil {
		return nil, err
	}
	budget, bwarn := tokenBudget(req.MaxOutputTokens)
	re, err := compilePattern(req.WaitFor)
	if err != nil {
		return nil, err
	}
	data := []byte(req.Chars)
	keys, err := encodeKeys(req.Keys, s.inputModes())
	if err != nil {
		return nil, err
	}
	data = append(data, keys...)
	if sy := s.shellYield(&req, data); sy != req.YieldTimeMs {
		yield = time.Duration(*sy) * time.Millisecond // a default, within the limits
	}
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("%w: input is %d bytes, more than %d; write the data to a file and pass its name", ErrInvalid, len(data), MaxInputBytes)
	}
	warns := appendNonEmpty(nil, ywarn, bwarn)
	s.begin()
	defer s.end()
	// Someone else's session (a human's ptyhub write into an agent's session, an agent's
	// write into a human's): this call reads from where its input goes in, with a
	// position of its own, and its input counts as typed by someone else in the owner's
	// next result, so the owner loses nothing it has not read.
	var from *int64
	if s.ownedByOther(c) {
		end := s.hub.End()
		from = &end
	}
	if s.isExited() {
		// One answer whatever path reported the exit (this call's client, another one,
		// kill_session): input is refused; a poll gets the exit and what is left unread.
		if len(data) > 0 || req.CloseStdin {
			return nil, s.inputRefused()
		}
		col := s.collect(ctx, collectOpts{deadline: t0, budget: budget, pattern: re, from: from, shellFrom: -1})
		r := c.result(s, t0, col, warns)
		s.shellResult(r, col, budget, nil)
		return r, nil
	}
	echo := s.echoOf(data, re)
	shellFrom := int64(-1) // a poll: a prompt after the cursor
	if len(data) > 0 {
		shellFrom = s.hub.End() // a prompt after this input
	}
	var job *writeJob
	if len(data) > 0 || req.CloseStdin {
		// No line of data is longer than data: a short write needs no look at the
		// terminal's mode.
		if s.tty && len(data) > MaxCanonLine {
			if a, err := s.master.Attrs(); err == nil && a.Canonical {
				if l := longestCanonLine(data, a.ICRNL, a.EOF); l > MaxCanonLine {
					return nil, fmt.Errorf("%w: a line of %d bytes is longer than the terminal's canonical-mode limit of %d, and the kernel would silently cut it; write the data to a file and pass its name, or send shorter lines", ErrInvalid, l, MaxCanonLine)
				}
			}
		}
		// ^C behind a blocked write would wait its turn: signal the foreground group too.
		if s.tty && bytes.IndexByte(data, 3) >= 0 && s.writing.Load() > 0 {
			if a, err := s.master.Attrs(); err == nil && a.Signals {
				s.master.Signal(syscall.SIGINT)
			}
		}
		var iw []string
		if from != nil {
			s.att.input.Add(int64(len(data)))
		}
		if len(data) > 0 {
			s.awaitAnswers(ctx, t0.Add(yield)) // the answers to what the program asked go in first
		}
		job, iw, err = s.input(data, req.CloseStdin)
		warns = append(warns, iw...)
		if err != nil {
			// The program ended meanwhile (perhaps from this very ^C): report it.
			warns = append(warns, "input not written: "+err.Error())
			job = nil
		}
	}
	deadline := t0.Add(yield)
	if job != nil {
		// Wait for the input to be written, at most the yield window (no timer when the
		// call wrote it itself, see Session.writeNow).
		var err error
		select {
		case err = <-job.done:
		default:
			timer := time.NewTimer(time.Until(deadline))
			select {
			case err = <-job.done:
			case <-timer.C:
			case <-ctx.Done():
			}
			timer.Stop()
		}
		if err != nil {
			warns = append(warns, "write failed: "+err.Error())
		}
	}
	poll := len(data) == 0 && !req.CloseStdin
	col := s.collect(ctx, collectOpts{deadline: deadline, budget: budget, pattern: re, needNews: poll, echo: echo, from: from, shellFrom: shellFrom, shellKernel: s.shellKernel(data), typed: job != nil && len(data) > 0})
	if job != nil {
		s.noteCollected()
	}
	r := c.result(s, t0, col, warns)
	s.shellResult(r, col, budget, data)
	if job != nil {
		if q := len(job.data) - int(job.written.Load()); q > 0 {
			r.QueuedBytes = q
			r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d input bytes are still queued: the program is not reading", q, len(job.data)))
		}
	}
	return r, nil
}

// echoOf returns the lines of input data whose echo wait_for must not match: on a
// terminal that echoes (or in raw mode, where the program echoes itself, as readline
// does); none with echo off in line mode (a password) or on pipes.
func (s *Session) echoOf(data []byte, re *regexp.Regexp) [][]byte {
	if re == nil || !s.tty || len(data) == 0 {
		return nil
	}
	if a, err := s.master.Attrs(); err != nil || !a.Echo && a.Canonical {
		return nil
	}
	return echoLines(data)
}

// inputRefused is the ErrExited error of input to s, which has exited: nothing was
// written, and whether output remains unread (ExitedUnread).
func (s *Session) inputRefused() error {
	unread := s.cursorBehind()
	select {
	case <-s.drained:
	default:
		unread = true // the end of its output is still on its way
	}
	left := ""
	if unread {
		left = "; " + ExitedUnread
	}
	return fmt.Errorf("%w: session %d (%s) %s; nothing was written%s", ErrExited, s.id, s.command, s.exitText(), left)
}

// cursorBehind reports whether output remains unread by the agent.
func (s *Session) cursorBehind() bool {
	s.collectMu.Lock()
	defer s.collectMu.Unlock()
	return s.cursor < s.hub.End()
}

func (s *Session) exitText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timedOut {
		return "timed out (exit code 124)"
	}
	return s.exit.String()
}

// Read re-reads output without moving the agent cursor.
func (c *Client) Read(ctx context.Context, req ReadRequest) (*Result, error) {
	if err := req.CheckSizes(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	s, err := c.lookup(req.SessionID)
	if err != nil {
		return nil, err
	}
	budget, bwarn := tokenBudget(req.MaxOutputTokens)
	view := req.View
	switch view {
	case "", "text":
		view = "text"
	case "raw":
	case "screen":
		return c.readScreen(s, t0, budget, appendNonEmpty(nil, bwarn))
	default:
		return nil, argError("view", fmt.Sprintf(" must be text, raw or screen, not %q", req.View))
	}
	if req.TailLines < 0 {
		return nil, argError("tail_lines", fmt.Sprintf(" must be positive (got %d)", req.TailLines))
	}
	s.touch()
	start, end := s.hub.Start(), s.hub.End()
	from, to := start, end
	if req.From != nil {
		from = *req.From
	}
	if req.To != nil {
		to = min(*req.To, end)
	}
	// Checked on the offsets as given, so the error names what the caller asked for.
	switch {
	case from < 0:
		return nil, argError("from", fmt.Sprintf(" must be 0 or more (got %d)", from))
	case req.To != nil && *req.To < 0:
		return nil, argError("to", fmt.Sprintf(" must be 0 or more (got %d)", *req.To))
	case req.To != nil && from > *req.To:
		return nil, &ArgError{Arg: "from", Problem: fmt.Sprintf(" %d is after ", from), Other: "to", After: fmt.Sprintf(" %d", *req.To)}
	case from > end:
		return nil, argError("from", fmt.Sprintf(" %d is past the end of the output (%d bytes)", from, end))
	}
	warns := appendNonEmpty(nil, bwarn)
	raw, missed, stop := s.readRaw(from, to)
	if missed > 0 {
		warns = append(warns, fmt.Sprintf("bytes %d to %d have left memory and are not shown", from, from+missed))
	}
	if stop < to {
		// What follows raw left memory and the transcript does not hold it (its cap,
		// a full disk): the read stops there (next_offset), so raw's offsets stay exact.
		if hs := s.hub.Start(); stop < hs {
			warns = append(warns, fmt.Sprintf("bytes %d to %d have left memory and the transcript does not hold them; this read stops at %d: read from there for what follows", stop, min(hs, to), stop))
		}
		to = stop
	}
	base := from + missed // the offset of raw[0]: only the start can be missing
	var tr truncate.Result
	if view == "text" {
		// Converted line by line into a collector, so a cut names its raw lines exactly.
		start := 0
		if req.TailLines > 0 {
			start = tailLinesStart(raw, req.TailLines)
		}
		var conv termtext.Converter
		lineFrom := base + int64(start)
		st := truncate.NewStream(budget, len(raw), &conv, &lineFrom)
		st.Write(raw[start:], lineFrom)
		tr = st.Result(base+int64(len(raw)), true)
	} else {
		text := strings.ToValidUTF8(string(raw), "\uFFFD")
		if req.TailLines > 0 {
			text = tailLines(text, req.TailLines)
		}
		tr = truncate.Middle(text, budget)
		// Middle's offsets are offsets into the text: raw offsets when it is all of raw.
		tr.CutFrom, tr.CutTo = base+tr.CutFrom, base+tr.CutTo
	}
	state, code, sig, core, timedOut := s.exitFields()
	r := &Result{SessionID: strconv.Itoa(s.id), UUID: s.uuid, State: state, ExitCode: code,
		Signal: sig, CoreDumped: core, TimedOut: timedOut, ReturnedBecause: BecauseRead,
		Output: tr.Text, NextOffset: to, MissedBytes: missed, ChunkID: chunkID()}
	if tr.Truncated {
		n := tr.OriginalTokens
		r.OriginalTokenCount = &n
		if view == "text" || req.TailLines == 0 {
			r.TruncatedRange = &[2]int64{tr.CutFrom, tr.CutTo}
		} else {
			warns = append(warns, "narrow from/to to read the part that was cut")
		}
	}
	r.Notices = c.notices(nil, warns)
	r.WallTimeMs = float64(time.Since(t0).Microseconds()) / 1000
	return r, nil
}

// readRaw returns output from [from, to), from memory or, where it has left memory,
// from the transcript: how many bytes at its start are in neither (missed), then raw,
// the bytes from from+missed to end, one run. Bytes in neither can also follow bytes
// read (the transcript stopped at its cap or at a write error while the ring moved on):
// the read then stops there, with end short of to, so that raw never spans a hole; a
// read from end goes on past it.
func (s *Session) readRaw(from, to int64) (raw []byte, missed, end int64) {
	raw = make([]byte, 0, max(min(to-from, int64(s.m.opts.Retain)), 0))
	buf := make([]byte, 32<<10)
	off := from
	for off < to {
		if off < s.hub.Start() { // left memory: the transcript may have it
			if n := s.readArchived(buf[:min(int64(len(buf)), to-off, s.hub.Start()-off)], off); n > 0 {
				raw = append(raw, buf[:n]...)
				off += int64(n)
				continue
			}
		}
		if start := s.hub.Start(); off < start { // gone from memory and from disk
			if len(raw) > 0 {
				return raw, missed, off // a hole after bytes read: raw ends here
			}
			skip := min(start, to) - off
			missed += skip
			off += skip
			continue
		}
		n, miss, err := s.hub.ReadAt(buf[:min(int64(len(buf)), to-off)], off)
		if miss > 0 { // the ring moved on since the check: go round again
			continue
		}
		if n == 0 || err != nil {
			break
		}
		raw = append(raw, buf[:n]...)
		off += int64(n)
	}
	return raw, missed, off
}

// tailLinesStart returns where in raw the last n lines of its text view begin (a line
// that is only escape sequences is no line of text).
func tailLinesStart(raw []byte, n int) int {
	var conv termtext.Converter
	starts := []int{0} // line starts in raw: the last n+1 of them
	var text []byte
	for off := 0; off < len(raw); {
		k := len(raw) - off
		if i := bytes.IndexByte(raw[off:], '\n'); i >= 0 {
			k = i + 1
		}
		text = conv.Write(text[:0], raw[off:off+k])
		off += k
		for _, r := range conv.Released() { // blank lines held back: each ended a line
			starts = append(starts, off-int(r[1]))
		}
		if len(starts) > n+1 {
			starts = starts[len(starts)-n-1:]
		}
		if len(text) > len(conv.Released()) && text[len(text)-1] == '\n' && conv.AtLineStart() {
			starts = append(starts, off)
			if len(starts) > n+1 {
				starts = starts[1:]
			}
		}
	}
	if starts[len(starts)-1] == len(raw) || len(conv.Pending()) == 0 && len(starts) > n {
		starts = starts[:len(starts)-1] // the text ends with a newline: no line after it
	}
	return starts[max(0, len(starts)-n)]
}

func tailLines(text string, n int) string {
	t := strings.TrimSuffix(text, "\n")
	idx := len(t)
	for i := 0; i < n; i++ {
		j := strings.LastIndexByte(t[:idx], '\n')
		if j < 0 {
			return text
		}
		idx = j
	}
	return text[idx+1:]
}

// List describes every session.
func (c *Client) List(ctx context.Context) (*ListResult, error) {
	c.m.mu.Lock()
	all := make([]*Session, 0, len(c.m.sessions))
	for _, s := range c.m.sessions {
		all = append(all, s)
	}
	c.m.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	out := &ListResult{Sessions: make([]Info, 0, len(all))}
	now := time.Now()
	var socks proc.Sockets
	for _, s := range all {
		if !s.isExited() {
			socks = proc.ListeningSockets()
			break
		}
	}
	for _, s := range all {
		s.waitSpawned() // a session being started: described once it runs (or could not)
		state, code, sig, _, timedOut := s.exitFields()
		s.mu.Lock()
		info := Info{SessionID: strconv.Itoa(s.id), Name: s.name, UUID: s.uuid, Command: s.command,
			State: state, PID: s.pid, AgeMs: now.Sub(s.started).Milliseconds(), ExitCode: code,
			Signal: sig, TimedOut: timedOut, Pruned: s.pruned, Rows: s.rows, Cols: s.cols, TTY: s.tty,
			OutputSize: s.hub.End(), IdleMs: float64(now.Sub(s.lastUsed).Milliseconds())}
		if s.owner != nil {
			info.Owner = s.owner.name
		}
		s.mu.Unlock()
		info.LastLine = s.lastLine()
		info.Clients = s.att.count()
		info.NeedsHuman, info.HumanMessage = s.asked()
		info.OutputStopped = s.outputStopped()
		s.addFacts(&info, socks, now)
		info.Shell = s.shellInfo(now)
		info.Completion = s.completion(false)
		out.Sessions = append(out.Sessions, info)
	}
	out.Notices = c.notices(nil, nil)
	return out, nil
}

// lastLine is the last non-empty line of the session's recent output, as text.
func (s *Session) lastLine() string {
	data, _ := s.hub.Tail(2048)
	lines := strings.Split(strings.TrimRight(termtext.String(data), "\n \t"), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if r := []rune(l); len(r) > 120 {
		l = string(r[:120]) + "…"
	}
	return l
}

// Kill ends a session's processes, or sends one signal, and optionally forgets it.
func (c *Client) Kill(ctx context.Context, req KillRequest) (*KillResult, error) {
	if err := req.CheckSizes(); err != nil {
		return nil, err
	}
	s, err := c.lookup(req.SessionID)
	if err != nil {
		return nil, err
	}
	s.begin()
	defer s.end()
	r := &KillResult{SessionID: strconv.Itoa(s.id), AlreadyEnded: s.isExited()}
	if req.Signal != "" {
		sig, err := pty.ParseSignal(req.Signal)
		if err != nil {
			return nil, argError("signal", ": "+err.Error())
		}
		if s.isExited() {
			return nil, fmt.Errorf("%w: session %d %s; no signal sent", ErrExited, s.id, s.exitText())
		}
		pgid := s.pid
		if s.tty {
			// The foreground process group: what a human's terminal would signal.
			if fg, err := s.master.ForegroundPgrp(); err == nil && fg > 0 && s.liveGroup(fg) {
				pgid = fg
			}
			switch sig {
			case syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTSTP: // what TIOCSIG can send
				err = s.master.Signal(sig)
			default:
				err = proc.SignalGroup(pgid, sig) // a live group of the session (liveGroup)
			}
		} else {
			err = s.rp.Load().SignalGroup(s.uuid, sig)
		}
		if err != nil {
			return nil, fmt.Errorf("session: signal %s: %w", pty.SignalName(sig), err)
		}
		r.SignalSent = pty.SignalName(sig)
		s.settle(pgid, signalSettle)
	} else if !s.isExited() {
		r.Survivors, r.SurvivorsMore = listSurvivors(s.kill(false))
	}
	if req.Remove {
		c.m.forget(s)
		r.Removed = true
	}
	var skip *Session
	r.State, r.ExitCode, r.Signal, _, _ = s.exitFields()
	if r.State == StateExited {
		skip = s
		s.mu.Lock()
		if s.owner == c {
			s.reported = true // this result tells the owner of the exit
		}
		s.mu.Unlock()
	}
	r.Notices = c.notices(skip, nil)
	return r, nil
}

// liveGroup reports whether pgid is a process group of the session with a live member.
// The terminal keeps naming its foreground group after the last process of that group
// has exited, and the number can then belong to an unrelated process; such a group is
// not ours to signal. The leader's own group always is: the reaper holds the leader
// unreaped until its exit is recorded. A member found here keeps the number from being
// reused until it exits, so only a group that ends between this check and the kill that
// follows, and whose number is handed out again in that instant, escapes it. The group
// leader is looked at first; the whole process table only when it has exited.
func (s *Session) liveGroup(pgid int) bool {
	if pgid == s.pid {
		return true
	}
	member := func(p proc.Info) bool { return p.Pgid == pgid && p.Sid == s.pid && !p.Dead() }
	if p, err := proc.Stat(pgid); err == nil && member(p) {
		return true
	}
	for _, p := range proc.List() {
		if member(p) {
			return true
		}
	}
	return false
}

// signalSettle bounds how long kill_session with a signal waits for the signal's effect.
const signalSettle = 500 * time.Millisecond

// signalReport bounds how long kill_session, once the signalled leader is seen dead,
// waits for its exit to be reported (the reaper's report and the session's exit path),
// so that the result says how it ended. That takes well under a millisecond on an idle
// machine, and can take longer than signalSettle on a loaded one.
const signalReport = 5 * time.Second

// settle waits until the signalled process group pgid has had the signal's effect, at
// most bound: the session exited, or pgid (not the leader's own group) is gone. When
// pgid is the leader's group and the leader is seen dead, it then waits for the exit's
// report, at most signalReport more. A group that catches or ignores the signal uses
// the whole bound. The group is looked at every millisecond: nothing notifies the end of
// a process that is not ours to wait for.
func (s *Session) settle(pgid int, bound time.Duration) {
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.exited:
			return
		case <-deadline.C:
			return
		case <-tick.C:
			if pgid != s.pid {
				if syscall.Kill(-pgid, 0) == syscall.ESRCH {
					return
				}
				continue
			}
			if p, err := proc.Stat(s.pid); err != nil || p.Dead() {
				// The signal had its effect; the report of the exit follows.
				report := time.NewTimer(signalReport)
				defer report.Stop()
				select {
				case <-s.exited:
				case <-report.C:
				}
				return
			}
		}
	}
}

// Resize changes the window size.
func (c *Client) Resize(ctx context.Context, req ResizeRequest) (*ResizeResult, error) {
	if err := req.CheckSizes(); err != nil {
		return nil, err
	}
	s, err := c.lookup(req.SessionID)
	if err != nil {
		return nil, err
	}
	if req.Rows < 1 || req.Rows > MaxRows || req.Cols < 1 || req.Cols > MaxCols {
		return nil, &ArgError{Arg: "rows", Problem: " and ", Other: "cols", After: fmt.Sprintf(" must be 1 to %d (got %dx%d)", MaxRows, req.Rows, req.Cols)}
	}
	if !s.tty {
		return nil, fmt.Errorf("%w: session %d runs on pipes (tty false) and has no window size", ErrInvalid, s.id)
	}
	if s.isExited() {
		return nil, fmt.Errorf("%w: session %d %s", ErrExited, s.id, s.exitText())
	}
	s.touch()
	if err := s.master.SetSize(req.Rows, req.Cols); err != nil {
		return nil, fmt.Errorf("session: resize: %w", err)
	}
	s.mu.Lock()
	s.rows, s.cols = req.Rows, req.Cols
	s.mu.Unlock()
	s.noteResize(req.Rows, req.Cols)
	return &ResizeResult{SessionID: strconv.Itoa(s.id), Rows: req.Rows, Cols: req.Cols, Notices: c.notices(nil, nil)}, nil
}

func appendNonEmpty(list []string, items ...string) []string {
	for _, it := range items {
		if it != "" {
			list = append(list, it)
		}
	}
	return list
}

// ownedByOther reports whether s belongs to a client of another pool than c (an agent's
// session and a CLI connection, or the reverse); sessions of one pool (the CLI's
// commands, one after another) share the session's read position.
func (s *Session) ownedByOther(c *Client) bool {
	s.mu.Lock()
	owner := s.owner
	s.mu.Unlock()
	return owner != nil && owner != c && owner.pool != c.pool
}
