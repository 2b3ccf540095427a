package session

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ptyhub/ptyhub/transcript"
)

// Recording. Every session records its transcript,
// <StateDir>/sessions/<uuid>.cast, through a recorder: a hub subscriber with
// its own cursor and a goroutine that runs only while output or events wait to
// be written (see run). The recorder holds the hub (broadcast.Hub.HoldWake):
// the ring never drops a byte it has not copied, so a recorder that lags a
// whole ring behind makes the session's reader wait, and through the pty the
// program, as a slow terminal would; the agent and attached humans never slow
// anything. So the transcript has every byte up to its cap; a disk error ends
// the transcript (a marker if it can still be written, and one log line) but
// not the reading, which goes on to keep the digest of the output.
//
// Offsets that have left the ring are read back from the transcript
// (transcript.Writer.ReadAt): from the .cast, and the ranges that hold bytes that
// are not valid UTF-8 from the raw spill <uuid>.raw (see package transcript),
// whose file is created once such output passes half the ring (what came before is
// copied from the ring). The hub lets go of output only once it is in the files
// (Writer.Settled), not while it waits in the writer's buffer. The spill lives while
// the session is in the manager's table: its file is closed when the transcript
// ends (read back by opening it again), and deleted when the session is removed or
// pruned, or when the manager is closed; a later manager's retention pass deletes
// spills left behind.

// pruneEvery throttles the retention pass: at most once per directory per
// interval, run by the recorder goroutine of a session that starts.
const pruneEvery = time.Minute

// maxQueuedInput bounds the input events waiting for a stalled recorder.
const maxQueuedInput = 1 << 20

var (
	pruneMu   sync.Mutex               // a leaf of the lock order (doc.go)
	lastPrune = map[string]time.Time{} // sessions dir → last retention pass
)

// recorder writes one session's transcript. Its methods are safe on a nil
// receiver (recording off or failed to start) and never block on the disk:
// input, resize and exit only queue an event for the recorder goroutine.
type recorder struct {
	s *Session
	// w is set by the goroutine before ready is closed (nil if the files could not be
	// created): creating them is kept off the exec path.
	w     *transcript.Writer
	ready chan struct{}

	mu sync.Mutex // guards the fields below; a leaf of the lock order (doc.go)
	// running is true while a run of the goroutine is under way (see kick). quiet says
	// the session's reader found nothing to read after its last Write to the hub (it is
	// about to wait for output, see markQuiet): a run caught up with the output then ends.
	running  bool
	quiet    bool
	stopping bool
	inputSet bool // inputT is set (see queue); beside the other bools, in one word
	events   []recEvent
	queued   int    // bytes of input data in events
	dropped  int64  // input bytes not queued because the recorder fell behind
	failed   string // why the transcript could not be created or stopped ("" while it records)
	finished bool   // the goroutine is done with the transcript
	removed  bool   // the session left the manager: release once finished
	// inputT pokes the goroutine for input no output followed (see queue).
	inputT *time.Timer

	onRelease   func()
	releaseOnce sync.Once
	// rounds counts the goroutine's wakes that found output to copy, each before the
	// round's first copied moves (read by tests; here it takes the padding after
	// releaseOnce).
	rounds atomic.Uint32

	// log is the text log and digest of the output (completion.go), set by the goroutine
	// once it finished it.
	log *textLog

	copied atomic.Int64 // output offset the goroutine has copied up to (awaitDone)

	wake chan struct{} // capacity 1: events were queued or stop was called
	done chan struct{} // closed when the goroutine has closed the transcript

	// The goroutine's state, kept from one run to the next (only the running one uses
	// it): the files' directory, the text log (nil until the first output, see textLog),
	// the output offset copied up to, the exit status once its event came, whether a
	// write error was logged.
	dir    string
	tl     *textLog
	cur    int64
	status string
	logged bool
	// The .log's file was created (empty) by begin, or could not be: the text log made
	// later appends to it, or says it has none.
	logMade, logFailed bool
}

// recEvent is an event waiting to be written after the output up to at.
type recEvent struct {
	at     int64 // hub offset when the event happened: output before it is written first
	t      time.Time
	code   byte // 'i' input, 'h' hidden input, 'r' resize, 'x' exit
	data   []byte
	n      int
	status string
}

// recorders is the manager's set of live recorders; Manager.Close waits for
// them and releases their spills.
type recorders struct {
	mu  sync.Mutex // a leaf of the lock order (doc.go)
	all map[*recorder]struct{}
}

func (rs *recorders) add(r *recorder) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.all == nil {
		rs.all = map[*recorder]struct{}{}
	}
	rs.all[r] = struct{}{}
}

func (rs *recorders) drop(r *recorder) {
	rs.mu.Lock()
	delete(rs.all, r)
	rs.mu.Unlock()
}

// len is the number of recorders not yet released.
func (rs *recorders) len() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.all)
}

// remove says the session left the manager (removed or pruned): once its
// transcript is finished, the spill is deleted and the recorder leaves the
// manager's set, so nothing of the session stays reachable. It does not wait.
// done, if not nil, is called once that happened.
func (r *recorder) remove(done func()) {
	if r == nil {
		if done != nil {
			done()
		}
		return
	}
	r.mu.Lock()
	r.removed = true
	r.onRelease = done
	finished := r.finished
	r.mu.Unlock()
	r.poke()
	if finished {
		r.release()
	}
}

// release deletes the spill and forgets the recorder. It runs once, from
// remove or from the goroutine's end, whichever sees both conditions.
func (r *recorder) release() {
	r.releaseOnce.Do(func() {
		if w := r.writer(); w != nil {
			w.Release()
		}
		r.s.m.recs.drop(r)
		r.mu.Lock()
		done := r.onRelease
		r.mu.Unlock()
		if done != nil {
			done()
		}
	})
}

// closeAll waits (until ctx is done) for every recorder to finish its
// transcript, then deletes the raw spills: after it, offsets that left the
// rings are no longer readable.
func (rs *recorders) closeAll(ctx context.Context) {
	rs.mu.Lock()
	all := make([]*recorder, 0, len(rs.all))
	for r := range rs.all {
		all = append(all, r)
	}
	rs.all = nil
	rs.mu.Unlock()
	for _, r := range all {
		r.stop()
		select {
		case <-r.done:
		case <-ctx.Done():
		}
		if r.writer() != nil {
			r.w.Release()
		}
	}
}

// recordDir returns the manager's transcript directory.
func (m *Manager) recordDir() (string, error) {
	return transcript.SessionsDir(m.opts.StateDir)
}

// TranscriptDir returns the directory of the manager's transcripts.
func (m *Manager) TranscriptDir() (string, error) { return m.recordDir() }

// TranscriptPath returns the path of the transcript of session id (a name — of
// the sessions called so, a running one, else the newest — short id, UUID or
// unique UUID prefix). The file exists unless recording is off
// (Options.NoRecord) or could not start (logged).
func (m *Manager) TranscriptPath(id string) (string, error) {
	s := m.newestNamed(id)
	if s == nil {
		var err error
		if s, err = m.lookupID(id); err != nil {
			return "", err
		}
	}
	dir, err := m.recordDir()
	if err != nil {
		return "", err
	}
	return transcript.Path(dir, s.uuid), nil
}

// processShell is this process's default shell, which every transcript's header names:
// found once, not on each session's start path (a copy of the environment and a stat).
var processShell = sync.OnceValue(func() string { return defaultShell(os.Environ()) })

// startRecorder creates the session's transcript and starts its goroutine. It
// runs before the reader starts. Failing to record is logged and costs only
// the transcript: it returns nil.
func startRecorder(s *Session, rows, cols int) *recorder {
	m := s.m
	if m.opts.NoRecord {
		return nil
	}
	dir, err := m.recordDir()
	if err != nil {
		m.log.Warn("transcript: not recording", "session", s.id, "err", err)
		s.recFail = err.Error()
		return nil
	}
	h := transcript.Header{Width: cols, Height: rows, Command: s.command, SessionID: s.id, Name: s.name,
		Env: map[string]string{"TERM": "xterm-256color", "SHELL": processShell()}}
	r := &recorder{s: s, wake: make(chan struct{}, 1), done: make(chan struct{}), ready: make(chan struct{}),
		dir: dir, running: true}
	// Held from the first byte: the reader has not started, and the goroutine reads from
	// offset 0 once the files exist. A Write that must wait for room starts the goroutine
	// if it is not running (it is started after each Write, but that Write has not
	// returned).
	s.hub.HoldWake(0, r.kick)
	m.recs.add(r)
	go r.first(h)
	return r
}

// kick makes sure the recorder goroutine runs after a Write to the hub: it starts a run
// unless one is under way, and says the output is no longer quiet, so the running one
// waits for the reader's next Flush instead of ending. The session's reader calls it
// after each Write and after closing the hub; the hub calls it before a Write waits for
// room. It takes a short mutex and, at the first output after a pause, starts a
// goroutine. Safe on a nil receiver and for concurrent use; it does not call the hub.
func (r *recorder) kick() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.quiet = false
	start := !r.running && !r.finished
	r.running = true
	r.mu.Unlock()
	if start {
		go r.run()
	}
}

// markQuiet says the session's reader found nothing to read: it is called before the
// reader's Flush of the hub (so a run that sees quiet false waits for a Flush still to
// come). Safe on a nil receiver.
func (r *recorder) markQuiet() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.quiet = true
	r.mu.Unlock()
}

// inputLag bounds how long an input event waits in the queue for a run to take it. Input
// does not start a run of its own: the program's answer (its echo, at least) starts one
// within microseconds, which writes the input and the output together; a program that
// prints nothing gets its input recorded inputLag later.
const inputLag = 20 * time.Millisecond

// queue hands an event to the goroutine: a resize or exit wakes it (or starts a run) at
// once, an input event at the next output's kick or inputLag later, whichever comes
// first; an input event queued settled (see input) at the next output's kick or the
// caller's settleInput, without the timer: setting a timer that ends sooner than the
// runtime's poller sleeps costs a wake of the poller's thread, once a turn.
func (r *recorder) queue(ev recEvent, settled bool) {
	ev.t = time.Now()
	ev.at = r.s.hub.End()
	r.mu.Lock()
	if ev.code == 'i' {
		if r.queued+len(ev.data) > maxQueuedInput {
			r.dropped += int64(len(ev.data))
			r.mu.Unlock()
			return
		}
		ev.data = append([]byte(nil), ev.data...)
		r.queued += len(ev.data)
	}
	r.events = append(r.events, ev)
	if settled {
		r.mu.Unlock()
		return
	}
	if ev.code == 'i' || ev.code == 'h' {
		if r.inputT == nil {
			r.inputT = time.AfterFunc(inputLag, r.poke)
		} else if !r.inputSet {
			r.inputT.Reset(inputLag)
		}
		r.inputSet = true
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	r.poke()
}

// poke wakes the recorder goroutine, or starts it if no run is under way (and it has
// not finished), to look at its events.
func (r *recorder) poke() {
	r.mu.Lock()
	start := !r.running && !r.finished
	r.running = true
	r.mu.Unlock()
	if start {
		go r.run()
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// pause ends the goroutine's run if the output is quiet (or has ended) and no event
// waits, nor a stop of ended output; it reports whether the run ends. Called by the
// running goroutine, caught up to the hub's end (ended: the goroutine has read the end
// of the stream): output written after that look is followed by a kick, and an event or
// stop by a poke, which then starts the next run or, if it came first, keeps this one.
//
// Before it ends the run it closes the text log's file (idle), so a session whose output
// paused holds no fd for it; a flood keeps the file open from one round to the next (a
// run ends only at a round of at most floodRound), where opening and closing it per
// round cost an openat and a close per ~64 KiB. The look is made twice: once to leave
// the file open when the run goes on, once, after the close, to end it.
func (r *recorder) pause(ended bool) bool {
	r.mu.Lock()
	ok := r.mayPause(ended)
	r.mu.Unlock()
	if !ok {
		return false
	}
	if r.tl != nil {
		r.tl.idle()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.mayPause(ended) {
		return false
	}
	r.running = false
	return true
}

// mayPause reports whether a run may end (pause); r.mu is held.
func (r *recorder) mayPause(ended bool) bool {
	return len(r.events) == 0 && !(ended && r.stopping) && (ended || r.quiet)
}

// input records data typed into the program; hidden input (echo off) is
// recorded as its length only. settled says the caller calls settleInput once it has
// collected the program's answer: the event then waits for the answer's kick or that
// call, with no timer (see queue).
func (r *recorder) input(data []byte, hidden, settled bool) {
	if r == nil || len(data) == 0 {
		return
	}
	if hidden {
		r.queue(recEvent{code: 'h', n: len(data)}, settled)
		return
	}
	r.queue(recEvent{code: 'i', data: data}, settled)
}

// settleInput makes sure that input queued with settled (see input) is taken: a run
// is poked if events wait and no timer will poke one. The caller that wrote the input
// calls it once it has collected the program's answer, whose output's kick has almost
// always taken the input already (then it does nothing).
func (r *recorder) settleInput() {
	if r == nil {
		return
	}
	r.mu.Lock()
	due := len(r.events) > 0 && !r.inputSet
	r.mu.Unlock()
	if due {
		r.poke()
	}
}

func (r *recorder) resize(rows, cols int) {
	if r == nil {
		return
	}
	r.queue(recEvent{code: 'r', data: fmt.Appendf(nil, "%dx%d", cols, rows)}, false)
}

// exit queues the end status; the transcript ends once the output is drained.
func (r *recorder) exit() {
	if r == nil {
		return
	}
	s := r.s
	s.mu.Lock()
	status := s.exit.String()
	if s.timedOut {
		status = "timed out (exit code 124)"
	}
	s.mu.Unlock()
	r.queue(recEvent{code: 'x', status: status}, false)
}

// stop tells the goroutine to finish once the output has ended; it does not
// wait (Manager.Close does).
func (r *recorder) stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	r.poke()
}

// readAt reads output at offset off that has left the ring; 0 when the
// transcript does not have it.
func (r *recorder) readAt(p []byte, off int64) int {
	if r == nil || r.writer() == nil {
		return 0
	}
	return r.w.ReadAt(p, off)
}

// writer returns the transcript writer once the goroutine created it, else nil.
func (r *recorder) writer() *transcript.Writer {
	select {
	case <-r.ready:
		return r.w
	default:
		return nil
	}
}

// readPiece is the most output the recorder hands the transcript at once: the .cast's
// output event of a flood.
const readPiece = 64 << 10

// create creates the transcript's files in dir; the spill starts once the output passes
// spillAfter bytes, from the ring's copy.
func (r *recorder) create(dir string, h transcript.Header, spillAfter int64) (*transcript.Writer, error) {
	return transcript.Create(dir, r.s.uuid, h, r.s.started, transcript.Options{Cap: r.s.m.opts.RecordCap, Spill: true,
		SpillAfter: spillAfter,
		Backfill: func(p []byte, off int64) (int, int64) {
			n, missed, _ := r.s.hub.ReadAt(p, off)
			return n, missed
		}})
}

// takeEvents takes the queued events, the count of input bytes dropped since the last
// take, and whether stop was called.
func (r *recorder) takeEvents() (evs []recEvent, dropped int64, stopping bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs, r.events, r.queued = r.events, nil, 0
	dropped, r.dropped = r.dropped, 0
	if r.inputSet {
		r.inputT.Stop() // if it fired already, its poke finds nothing to do
		r.inputSet = false
	}
	return evs, dropped, r.stopping
}

// writeEvent writes an input, hidden input or resize event to the transcript.
func (r *recorder) writeEvent(ev recEvent) {
	switch ev.code {
	case 'i':
		r.w.Input(ev.t, ev.data)
	case 'h':
		r.w.Hidden(ev.t, ev.n)
	case 'r':
		cols, rows := 0, 0
		fmt.Sscanf(string(ev.data), "%dx%d", &cols, &rows)
		r.w.Resize(ev.t, cols, rows)
	}
}

// run is one run of the recorder goroutine, owned by the recorder: it copies output from
// its own hub cursor and the queued events into the transcript, in order. The first run
// (first, started by startRecorder) creates the files. A run ends once it has caught up
// with the output and the events and the reader found nothing more to read (markQuiet;
// in a flood it waits per batch instead): the reader's next Write (kick), an event
// (poke; input at the next output or inputLag later, see queue) or a Write that waits
// for room (the hub's HoldWake) starts the next, so an idle
// session has no recorder goroutine. The last run stops once the output has ended (hub
// closed and read) and the exit is known or stop was called; it then closes the
// transcript and closes done.
func (r *recorder) run() {
	hub := r.s.hub
	spillAfter := int64(r.s.m.opts.Retain / 2)
	// release lets the hub drop what the transcript's files hold (Writer.Settled: not
	// what still waits in the writer's buffer), once the output passed spillAfter.
	release := func() {
		if r.cur > spillAfter {
			hub.Release(min(r.cur, r.w.Settled()))
		}
	}
	// pump writes output from r.cur up to limit (-1: all there is); it reports whether
	// the stream has ended. It reads the ring in place (broadcast.Hub.HeldView: the
	// recorder holds the hub at or below r.cur, so the bytes stay put until release lets
	// them go, after they were written), at most a piece of readPiece bytes at a time,
	// which is what one output event of the .cast holds in a flood; a piece that wraps
	// around the ring's end is two events.
	round := int64(0)     // bytes copied since the last wake
	flood := false        // the last round was a flood's (see floodRound)
	var idleT *time.Timer // bounds a flood's wait (floodLag), closes the text log's file in a long one (logIdle)
	put := func(p []byte) {
		if len(p) == 0 {
			return
		}
		if round == 0 {
			r.rounds.Add(1)
		}
		r.w.Output(time.Now(), r.cur, p)
		r.textLog().output(p)
		r.cur += int64(len(p))
		round += int64(len(p))
		r.copied.Store(r.cur)
		release()
	}
	pump := func(limit int64) bool {
		for {
			n := readPiece
			if limit >= 0 {
				if r.cur >= limit {
					return false
				}
				n = int(min(int64(n), limit-r.cur))
			}
			p, q, err := hub.HeldView(r.cur, n)
			put(p)
			put(q)
			if err != nil {
				return true
			}
			if len(p) == 0 {
				return false
			}
		}
	}
	for {
		// A wake that finds nothing new to copy with the output quiet (the reader's Flush
		// after output a run already copied, or the first run of a session that has not
		// printed) ends the run before it takes a batch to wait for, so an idle session
		// leaves no channel behind in the hub.
		if hub.End() == r.cur && r.pause(false) {
			return
		}
		// Woken per batch of output or when the output pauses (broadcast.Hub.NotifyBatch),
		// so a burst wakes this goroutine (and writes the files) once per batch instead of
		// at every read of the session's reader (~4 KiB), which paid a thread wake-up for
		// each; events (r.wake) end the wait at once. A flood's wait is taken after the
		// round instead (below).
		var notify <-chan struct{}
		if !flood {
			notify = hub.NotifyBatch(r.cur)
		}
		round = 0
		evs, dropped, stopping := r.takeEvents()
		for _, ev := range evs {
			pump(ev.at) // the output before the event first
			if ev.code == 'x' {
				r.status = ev.status
			} else {
				r.writeEvent(ev)
			}
		}
		if dropped > 0 {
			r.w.Marker(time.Now(), fmt.Sprintf("[%d bytes of input not recorded: the transcript fell behind]", dropped))
		}
		ended := pump(-1)
		r.w.Flush()
		release()
		if err := r.w.Err(); err != nil && !r.logged {
			r.logged = true
			r.s.m.log.Warn("transcript: recording stopped", "session", r.s.id, "err", err)
			r.fail(err)
		}
		if ended && (r.status != "" || stopping) {
			break
		}
		// Caught up with quiet output (the reader found nothing after its last Write),
		// or with output that ended: the run ends, and the next Write's kick or an event
		// starts the next. Not after a round of a flood (floodRound): the reader finds
		// the terminal empty now and then in a flood, and a run that ended at each of
		// those pauses would cost a goroutine's start (and its stack's growth) per
		// ~100 KiB; the run then waits for the next output's wake, whose smaller round
		// ends it. Otherwise (output written since the pump) the reader's next Flush or
		// batch boundary comes after notify was taken, and ends the wait.
		if hub.End() == r.cur && (ended || round <= floodRound) && r.pause(ended) {
			return
		}
		// In a flood the run waits for the next batch boundary only
		// (broadcast.Hub.NotifyBoundary), not for the reader's Flush: the reader finds the
		// terminal empty every ~50-100 KiB of a flood, and a wake at each of those cost a
		// thread wake-up and a round about four times as often as the batches. What the
		// reader wrote after a Flush that no boundary follows (the flood stopped) waits in
		// the ring, held, for at most floodLag, then is written, and a small round that
		// finds the output quiet ends the run.
		wasFlood := flood
		flood = !ended && round > floodRound
		switch {
		case flood:
			notify = hub.NotifyBoundary(r.cur)
		case wasFlood:
			// A flood's round took no NotifyBatch before it, and one taken now could miss
			// the Flush of output written since the pump: the next round takes it first.
			continue
		case ended:
			notify = nil // a closed hub's channel is always ready
		}
		if !flood && (r.tl == nil || r.tl.f == nil) {
			select {
			case <-notify:
			case <-r.wake:
			}
			continue
		}
		// A flood's wait lasts at most floodLag. Otherwise the text log's file is open (a
		// flood keeps it so from one round to the next, see pause): a wait that lasts
		// logIdle closes it, so a session whose output stopped while this run waits for
		// its next output holds no fd for it.
		d := logIdle
		if flood {
			d = r.s.m.floodLag
			if d == 0 {
				d = floodLag
			}
		}
		if idleT == nil {
			idleT = time.NewTimer(d)
		} else {
			idleT.Reset(d)
		}
		select {
		case <-notify:
		case <-r.wake:
		case <-idleT.C:
			if !flood {
				r.tl.idle()
				select {
				case <-notify:
				case <-r.wake:
				}
			}
		}
		idleT.Stop()
	}
	r.close(r.textLog(), r.status, r.logged)
	r.finish()
}

// logIdle is how long a run waits for output with the text log's file open before it
// closes the file: far longer than a flood's rounds (a few ms), short for a person.
const logIdle = 100 * time.Millisecond

// floodLag bounds how long output a flood left in the ring after its last batch boundary
// waits for the recorder (see run): far longer than a batch of a flood (a few ms), short
// for a person watching the transcript.
const floodLag = 100 * time.Millisecond

// floodRound is the round (bytes copied after one wake) after which a run does not end
// at a pause of the output: it is in a flood.
const floodRound = 16 << 10

// textLog returns the text log, created at the first output (or at the end): a session
// that has printed nothing holds none.
func (r *recorder) textLog() *textLog {
	if r.tl == nil {
		r.tl = newTextLog(r.dir, r.s.uuid, r.s.m.opts.RecordCap)
		r.tl.started, r.tl.failed = r.logMade, r.logFailed // its file, made by begin
	}
	return r.tl
}

// begin creates the transcript's files (kept off the exec path: the first run does it),
// and runs the retention pass if one is due; it reports whether the
// transcript could be created. Output waits in the hub meanwhile (the recorder reads
// from offset 0), events in the queue. Output that fits in the ring is read from the
// ring: the spill (and its fd) is created only once the output passes half the ring,
// from the ring's copy; so the hold stays at 0 until then (the first Output past
// spillAfter creates the spill if some output needs one).
func (r *recorder) begin(h transcript.Header) bool {
	w, err := r.create(r.dir, h, int64(r.s.m.opts.Retain/2))
	if err != nil {
		r.s.m.log.Warn("transcript: not recording", "session", r.s.id, "err", err)
		r.fail(err)
		close(r.ready)
		return false
	}
	r.w = w
	close(r.ready)
	// The .log's file after ready: a quick command's result waits for ready (a
	// transcript that could not be created is said in it), not for the log; its end
	// then only appends to the file (or, silent, opens none). The text log itself is
	// made at the first output (textLog), so an idle session holds no more than this.
	r.logMade, r.logFailed = createLogFile(transcript.LogPath(r.dir, r.s.uuid))
	r.maybePrune(r.dir)
	return true
}

// first is the recorder goroutine's first run: it creates the files with header h, then
// runs (run), or finishes at once if they could not be created.
func (r *recorder) first(h transcript.Header) {
	if hold := r.s.m.holdRecord; hold != nil {
		hold()
	}
	if !r.begin(h) {
		r.finish()
		return
	}
	r.run()
}

// finish ends the last run: the session's reader never waits for the recorder again,
// and done is closed.
func (r *recorder) finish() {
	r.s.hub.Unhold()
	r.mu.Lock()
	r.finished = true
	r.running = false
	removed := r.removed
	r.mu.Unlock()
	close(r.done)
	if removed {
		r.release()
	}
}

// close closes the transcript with the exit status (status, "" when unknown) and the
// text log tl, and publishes tl; a failure is logged unless one was (logged).
func (r *recorder) close(tl *textLog, status string, logged bool) {
	if status == "" {
		status = "transcript closed before the exit was known"
	}
	if err := r.w.Close(time.Now(), status); err != nil && !logged {
		r.s.m.log.Warn("transcript: recording stopped", "session", r.s.id, "err", err)
		r.fail(err)
	}
	tl.close()
	r.mu.Lock()
	r.log = tl
	r.mu.Unlock()
}

// fail records why the transcript stopped (the first reason is kept).
func (r *recorder) fail(err error) {
	r.mu.Lock()
	if r.failed == "" {
		r.failed = err.Error()
	}
	r.mu.Unlock()
}

// transcriptProblem says why the session's transcript is not recorded, or stopped: its
// files could not be created, or a write failed (a read-only or full disk); "" while it
// records, or when recording is off by choice. With wait, it first waits until the
// recorder has tried to create the files (a few system calls in the recorder's
// goroutine, begun when the session started; a loaded machine may run them after the
// program's first output), so that a result that carries output or the exit says a
// transcript that could not be created: nobody is left believing a transcript is
// recorded that is not. A result that carries neither (exec_command returning before
// the program printed) does not wait: there is nothing yet to record, and the next
// result says it. The wait lasts at most recordWait; pending says the recorder had not
// tried by then (a hung state directory), after which no result waits again, and a
// later result says the failure if one comes.
func (s *Session) transcriptProblem(wait bool) (problem string, pending bool) {
	if s.recFail != "" {
		return s.recFail, false
	}
	r := s.rec
	if r == nil {
		return "", false
	}
	select {
	case <-r.ready:
	default:
		if wait && !s.toldPending.Load() {
			t := time.NewTimer(s.m.recordWaitTime())
			select {
			case <-r.ready:
			case <-r.done:
			case <-t.C:
				pending = true
			}
			t.Stop()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed, pending && r.failed == ""
}

// recordWait bounds a result's wait for the recorder's attempt to create the transcript
// (see transcriptProblem): far longer than that attempt takes on a loaded machine (a
// few milliseconds), short enough that a hung state directory holds a result only once.
const recordWait = 5 * time.Second

// recordWaitTime is how long a result waits for the recorder's attempt: recordWait
// unless a test set another.
func (m *Manager) recordWaitTime() time.Duration {
	if m.recordWait != 0 {
		return m.recordWait
	}
	return recordWait
}

// maybePrune runs the retention pass over dir unless one ran recently.
func (r *recorder) maybePrune(dir string) {
	now := time.Now()
	pruneMu.Lock()
	if now.Sub(lastPrune[dir]) < pruneEvery {
		pruneMu.Unlock()
		return
	}
	lastPrune[dir] = now
	pruneMu.Unlock()
	o := r.s.m.opts
	keep, keepBytes := o.RecordKeep, o.RecordKeepBytes
	if keep == 0 {
		keep = transcript.DefaultKeep
	}
	if keepBytes == 0 {
		keepBytes = transcript.DefaultKeepBytes
	}
	removed, err := transcript.Prune(dir, keep, keepBytes, now)
	if err != nil {
		r.s.m.log.Warn("transcript: retention", "err", err)
	}
	if len(removed) > 0 {
		r.s.m.log.Info("transcript: retention removed old files", "count", len(removed))
	}
}
