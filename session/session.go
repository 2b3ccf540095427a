package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ptyhub/ptyhub/broadcast"
	"github.com/ptyhub/ptyhub/pty"
	"github.com/ptyhub/ptyhub/reaper"
	"github.com/ptyhub/ptyhub/shellint"
	"github.com/ptyhub/ptyhub/termtext"
)

// exitDrainQuiet is how long output may stay quiet after the leader exited before the
// output counts as drained although something still holds the terminal.
const exitDrainQuiet = 50 * time.Millisecond

// Session is one program on a pseudo-terminal (or pipes) and everything it printed.
type Session struct {
	m       *Manager
	id      int
	uuid    string
	command string
	tty     bool
	profile string
	started time.Time
	pid     int

	master *pty.Master     // tty sessions
	stdin  *os.File        // pipe sessions: our write end
	pipe   *pty.FileReader // pipe sessions: reads output (the read end)
	output io.ReadCloser
	hub    *broadcast.Hub

	qmu   sync.Mutex  // guards queue and writerOn; a leaf of the lock order (doc.go)
	queue []*writeJob // input for the writer goroutine, in order
	// writerOn is true while a writer goroutine runs (writeLoop): enqueue starts one when
	// there is none, and it ends once it found the queue empty, so an idle session has
	// none. Guarded by qmu.
	writerOn bool
	quit     chan struct{} // closed when the session is torn down: stops the writer

	// rp is the reaper that started the program: set before the session is in the
	// manager's table, and again by a spawn that had to start a new one. A reaper
	// started after this one died knows nothing of the session.
	rp          atomic.Pointer[reaper.Reaper]
	leaderStart uint64 // the leader's start time (proc.StartTime), set by spawn

	// The leader's end, as told (tellEnd) by the reaper (OnExit) or by the wait for a
	// held leader's exit (watchHeld): endHow and endExit are written once, before the
	// second of exitGate's two adds, which starts the exit path (waitExit).
	endTold  atomic.Bool
	exitGate atomic.Int32 // 2 once the spawn is done and the end is known
	endHow   endHow
	endExit  reaper.Exit
	// heldFD is the held leader's pidfd + 1 while heldExits watches it (0: none).
	//lint:ignore U1000 used on the kernel path only (held_native.go), none is held on the portable paths
	heldFD atomic.Int32

	exited  chan struct{} // closed once the exit status is recorded
	drained chan struct{} // closed when the reader reached the end of output

	// mu guards the fields below. Lock order (doc.go): after collectMu, Client.mu and
	// Manager.mu; before attachState.mu and registry.mu.
	mu         sync.Mutex
	exit       pty.ExitStatus
	exitErr    error
	exitedAt   time.Time
	timedOut   bool
	survivors  []Survivor
	lastUsed   time.Time
	inFlight   int
	rows, cols int
	owner      *Client
	reported   bool // a result of the agent's has told of the exit
	removed    bool
	pruned     bool   // ended by the per-client limit
	leaving    bool   // guarded by m.mu: pruned, its end not yet recorded (Manager.admitLocked)
	pool       string // immutable: the pool it counts in
	timer      *time.Timer

	// Agent cursor, guarded by collectMu: collects of one session are serialised so each
	// byte goes to exactly one call. collectMu is first in the lock order (doc.go): a
	// collect takes the others while it holds it, never the other way round.
	collectMu sync.Mutex
	cursor    int64
	conv      termtext.Converter
	lineFrom  int64 // raw offset where the converter's unfinished line began

	writing atomic.Int64 // bytes queued or being written
	typed   atomic.Int64 // input jobs queued so far (keys, text, EOF): news for a watch (watch.go)

	// readHeld is true while the reader holds bytes taken from the master that are not
	// yet in the hub (pty.Master.ReadHold); the waiting-for-input detector reads it.
	readHeld atomic.Bool
	wait     waitState // waiting.go: the waiting-for-input detector's cached facts
	// spawned is closed when start has finished with the session: its program and
	// terminal (master, output, pid, goroutines) are set, or it could not run. The
	// session is in the manager's table before that; see waitSpawned.
	spawned chan struct{}
	// probeTimer closes the detector's /proc descriptors kept past a collect
	// (collect.go: keepProbeFiles); nil until first kept. Made and reset under
	// collectMu; the exit path fires it (waitExit).
	probeTimer atomic.Pointer[time.Timer]

	// Feature state; each type lives in its own file with its own owner (see hooks.go).
	scr *screenState // screen.go: terminal emulator, query answers, screen view
	rec *recorder    // record.go: asciicast transcript on disk
	// recFail says why no recorder could start ("" otherwise); set before the reader
	// starts, then read only.
	recFail string
	// toldTranscript: a result of the session's owner said its transcript is not
	// recorded (said once). toldPending: one said the recorder had not yet tried to
	// create it (see transcriptProblem); later results then do not wait for it.
	toldTranscript atomic.Bool
	toldPending    atomic.Bool
	att            attachState // attach.go: attached human clients
	// sh follows an integrated shell's marks (shell.go); nil without shell integration.
	// The reader feeds it each chunk before the hub has it.
	sh  *shellint.Tracker
	ask askState // ask.go: an agent asking for a person

	xoff atomic.Bool // a ^S stopped the terminal's output (noteFlow)
	// ahead is the writer's own cache for holdTypeahead, made by the first input held
	// (nil until then: 240 bytes an idle session does not need). Used only by the
	// running writer (writeLoop; one at a time, handed on under qmu).
	ahead *waitState

	name string // immutable: the session's name ("" when none), see names.go
	// lastOut is when the reader last moved output into the hub (UnixNano; 0: never).
	lastOut atomic.Int64
	// settledAnyCursor, guarded by collectMu, lets the waiting-for-input detector count
	// output as settled with output the agent has not read (a wait's look, wait.go).
	settledAnyCursor bool
	// matchedPatterns, guarded by matchMu (a leaf of the lock order, doc.go), are the
	// wait_for patterns (their source) this session's output has matched in a collect,
	// most recent last, at most maxMatchedPatterns (names.go: an Exec naming the running
	// session counts them).
	matchMu         sync.Mutex
	matchedPatterns []string
}

// lastOutputAt is when the program last printed (zero: never).
func (s *Session) lastOutputAt() time.Time {
	if n := s.lastOut.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// writeJob is one message for the writer goroutine.
type writeJob struct {
	data    []byte
	closeIn bool // after data, close the stdin pipe (pipe sessions)
	// sig, when set, is sent to the session's process group after data (a control key
	// typed into a pipe session, which has no line discipline to turn it into a signal).
	sig     syscall.Signal
	written atomic.Int64
	done    chan error // buffered 1
	// started: the writer has let the job through (holdTypeahead) and noted its input;
	// what is left to write starts at written. Only the writer touches it.
	started bool
	// collects: the call that queued the job collects the program's answer next and
	// then calls noteCollected (Session.input), so input written by that call itself
	// (writeNow) is noted for the transcript without a timer of its own.
	collects bool
}

// waitSpawned returns once start has finished with s (at once for a session made
// otherwise). A caller that found s in the manager's table calls it before it touches
// s's terminal or program: start adds s there before it spawns the program, and another
// call may find it in between.
func (s *Session) waitSpawned() {
	if s.spawned != nil {
		<-s.spawned
	}
}

// ID returns the short id.
func (s *Session) ID() int { return s.id }

// UUID returns the session's UUID.
func (s *Session) UUID() string { return s.uuid }

// spawn starts the program through the reaper and the session's goroutines.
func (s *Session) spawn(spec reaper.Spec, rows, cols int) error {
	var childIn, childOut *os.File
	if s.tty {
		master, slave, err := pty.Open(rows, cols)
		if err != nil {
			return err
		}
		s.master, s.output = master, master
		childIn, childOut = slave, slave
		spec.Ctty = true
		if s.profile == ProfileAgent {
			// A ^S in an agent's input (a key, pasted text) must not stop all output
			// with no sign: the program gets the byte instead.
			if err := master.SetFlowControl(false); err != nil {
				master.Close()
				slave.Close()
				return err
			}
		}
	} else {
		inR, inW, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("pipe: %w", err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			return fmt.Errorf("pipe: %w", err)
		}
		s.stdin, s.output = inW, outR
		childIn, childOut = inR, outW
		if s.pipe, err = pty.NewFileReader(outR); err != nil {
			inR.Close()
			inW.Close()
			outR.Close()
			outW.Close()
			return fmt.Errorf("pipe: %w", err)
		}
	}
	rp, hold, err := s.m.startReaper()
	if err != nil {
		childIn.Close()
		if childOut != childIn {
			childOut.Close()
		}
		s.output.Close()
		if s.stdin != nil {
			s.stdin.Close()
		}
		return err
	}
	s.rp.Store(rp)
	spec.Hold = hold
	spec.OnExit = func(e reaper.Exit) { s.tellEnd(endReported, e) }
	pid, _, err := rp.Spawn(spec, childIn, childOut, childOut)
	childIn.Close()
	if childOut != childIn {
		childOut.Close()
	}
	if err != nil {
		s.output.Close()
		if s.stdin != nil {
			s.stdin.Close()
		}
		return err
	}
	s.pid = pid
	s.leaderStart = procStart(pid)
	s.m.reg.add(s)
	s.startFeatures(rows, cols)
	go s.readLoop()
	if hold {
		s.watchHeld()
	}
	s.exitReady()
	return nil
}

// endHow says how the leader's end was told (tellEnd).
type endHow uint8

const (
	endReported endHow = iota + 1 // the reaper reported it (endExit): its status, or its own death
	endZombie                     // the held leader exited: its status is readable from /proc
	endAsk                        // the held leader's exit cannot be watched: ask the reaper
)

// tellEnd records how the leader ended (only the first telling counts) and starts the
// exit path once the spawn is done too. It does not block: the reaper's and heldExits'
// goroutines call it.
func (s *Session) tellEnd(how endHow, e reaper.Exit) {
	if !s.endTold.CompareAndSwap(false, true) {
		return
	}
	s.endHow, s.endExit = how, e
	s.exitReady()
}

// exitReady is called once by the spawn when the session's goroutines run and once by
// tellEnd: the second starts the exit path.
func (s *Session) exitReady() {
	if s.exitGate.Add(1) == 2 {
		go s.waitExit()
	}
}

// readBuffers lend the session readers their read buffers: a reader takes one only when
// its program has printed, so an idle session holds none. pty reads return at most ~4
// KiB; a pipe's up to the buffer.
var readBuffers = pty.NewBufferPool(8 << 10)

// readLoop is the session's one reader: it moves output into the hub until the end of the
// stream. Once the hub's ring has its full size (the session printed a ring's worth, as
// in a flood) it reads straight into the ring (broadcast.Hub.Reserve, Commit), so no byte
// is copied after the kernel's copy; before that, into a pooled buffer that it writes to
// the hub, so a quiet session keeps a small ring and, parked, no buffer. Each time a read
// finds nothing it flushes the hub (broadcast.Hub.Flush), so the readers woken per batch
// (transcript, screen answerer, a collect in a flood) see the end of every burst at once
// and need no timer. Owned by the session; stops at EOF/EIO or when the output is closed.
func (s *Session) readLoop() {
	idle := s.hub.Flush
	if s.rec != nil {
		// The recorder first learns the output is quiet, then the Flush wakes it (see
		// recorder.markQuiet).
		idle = func() {
			s.rec.markQuiet()
			s.hub.Flush()
		}
	}
	read, readInto := s.master.ReadPooled, s.master.ReadHold
	if !s.tty {
		read, readInto = s.pipe.ReadPooled, s.pipe.ReadHold
	}
	for {
		var buf []byte
		var n int
		var err error
		lent := s.hub.Reserve(broadcast.ReserveMax)
		if lent != nil {
			buf = lent
			n, err = readInto(lent, &s.readHeld, idle)
		} else {
			buf, n, err = read(readBuffers, &s.readHeld, idle)
		}
		if n > 0 {
			if s.sh != nil {
				s.sh.Feed(buf[:n], s.hub.End(), time.Now())
			}
			if lent != nil {
				s.hub.Commit(n)
			} else {
				s.hub.Write(buf[:n])
			}
			s.lastOut.Store(time.Now().UnixNano())
			s.noteOutput(buf[:n])
			if lent == nil {
				readBuffers.Put(buf)
			}
		} else if lent != nil {
			s.hub.Commit(0)
		}
		s.readHeld.Store(false)
		if err != nil {
			if err = pty.EOF(err); err != io.EOF {
				s.m.log.Warn("reading the session's output failed", "session", s.id, "err", err)
			}
			s.hub.Close()
			s.noteOutputEnd()
			close(s.drained)
			return
		}
	}
}

// writeLoop is the session's writer: whole messages in order. It is started by enqueue
// when the queue gets work and no writer runs (on a terminal: when the caller, which
// wrote what it could itself, left a message or the rest of one to wait, see writeNow),
// and ends once it finds the queue empty (or the session torn down: then it fails what
// is queued), so at most one writer — this loop or a caller in writeNow — runs at a
// time and an idle session has none. A message writeNow started goes on from what it
// wrote. Owned by the session; a blocked write is woken by closing the master or pipe
// at teardown.
func (s *Session) writeLoop() {
	var w io.Writer = s.stdin
	if s.tty {
		w = s.master
	}
	for {
		s.qmu.Lock()
		select {
		case <-s.quit:
			s.writerOn = false
			s.qmu.Unlock()
			s.failQueue()
			return
		default:
		}
		if len(s.queue) == 0 {
			s.writerOn = false
			s.qmu.Unlock()
			return
		}
		job := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if len(s.queue) == 0 {
			s.queue = nil // let the backing array go
		}
		s.qmu.Unlock()
		var err error
		if !job.started {
			var at termAttrs
			if !s.holdTypeahead(job, &at) {
				job.done <- fmt.Errorf("%w: session %d", ErrExited, s.id)
				s.writing.Add(-int64(len(job.data)))
				continue // the session is torn down: the loop's next turn fails the queue
			}
			s.startJob(job, &at, false)
		}
		for p := job.data[job.written.Load():]; len(p) > 0 && err == nil; {
			chunk := p[:min(len(p), 4096)]
			var n int
			n, err = w.Write(chunk)
			job.written.Add(int64(n))
			s.writing.Add(-int64(n))
			p = p[n:]
		}
		s.writing.Add(-(int64(len(job.data)) - job.written.Load()))
		if err == nil && job.sig != 0 {
			err = s.rp.Load().SignalGroup(s.uuid, job.sig)
		}
		if err == nil && job.closeIn && s.stdin != nil {
			err = s.stdin.Close()
		}
		job.done <- err
	}
}

// noteFlow follows output flow control through the input: with IXON on, VSTOP stops
// the terminal's output and VSTART (or, with IXANY, any byte) restarts it. Called by the
// writer before data is written, with the terminal's flags read for it (at); every byte
// to the terminal goes through the writer.
func (s *Session) noteFlow(data []byte, at *termAttrs) {
	if !s.tty {
		return
	}
	a, err := at.get(s)
	if err != nil {
		return
	}
	if !a.IXON {
		s.xoff.Store(false) // clearing IXON restarts stopped output
		return
	}
	stopped := s.xoff.Load()
	for _, b := range data {
		switch {
		case b == a.Stop && a.Stop != 0:
			stopped = true
		case b == a.Start && a.Start != 0, stopped && a.IXANY:
			stopped = false
		}
	}
	s.xoff.Store(stopped)
}

// outputStopped reports whether the terminal's output is stopped by a ^S (see noteFlow).
func (s *Session) outputStopped() bool {
	if !s.tty || !s.xoff.Load() || s.isExited() {
		return false
	}
	a, err := s.master.Attrs()
	return err == nil && a.IXON
}

// failQueue ends every queued job: the session is gone.
func (s *Session) failQueue() {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	for _, job := range s.queue {
		s.writing.Add(-int64(len(job.data)))
		job.done <- fmt.Errorf("%w: session %d", ErrExited, s.id)
	}
	s.queue = nil
}

// enqueue hands data to the writer and returns at once; the job's done channel says when
// it was written.
func (s *Session) enqueue(data []byte, closeIn bool) (*writeJob, error) {
	return s.enqueueJob(&writeJob{data: data, closeIn: closeIn, done: make(chan error, 1)})
}

// enqueueJob is enqueue of a prepared job.
func (s *Session) enqueueJob(job *writeJob) (*writeJob, error) {
	data := job.data
	s.qmu.Lock()
	select {
	case <-s.quit:
		s.qmu.Unlock()
		return nil, fmt.Errorf("%w: session %d", ErrExited, s.id)
	default:
	}
	s.writing.Add(int64(len(data)))
	s.typed.Add(1)
	if !s.writerOn && s.tty {
		// Nothing queued and no writer: the caller is the writer for this job, as far
		// as it can go without waiting (writeNow). A turn then costs no goroutine and
		// no wake-up between the caller and a writer.
		s.writerOn = true
		s.qmu.Unlock()
		done := s.writeNow(job)
		s.qmu.Lock()
		if !done {
			s.queue = slices.Insert(s.queue, 0, job) // first: it came before anything queued since
		}
		if len(s.queue) == 0 {
			s.writerOn = false
			s.qmu.Unlock()
			return job, nil
		}
		s.qmu.Unlock()
		go s.writeLoop() // the rest waits there, in order
		return job, nil
	}
	s.queue = append(s.queue, job)
	start := !s.writerOn
	s.writerOn = true
	s.qmu.Unlock()
	if start {
		go s.writeLoop()
	}
	return job, nil
}

// writeNow does the writer's work on job in the caller's goroutine, as long as nothing
// has to wait: it returns false, with the job's state kept for writeLoop (started, and
// written so far), when the input must be held (holdTypeahead) or the terminal's input
// queue is full; true once the job is done (its result sent on done). The caller holds
// the writer's role (writerOn). Terminal sessions only.
func (s *Session) writeNow(job *writeJob) bool {
	var at termAttrs
	if !s.mayWrite(job, time.Now(), &at) {
		return false
	}
	s.startJob(job, &at, job.collects)
	var err error
	for p := job.data; len(p) > 0; {
		var n int
		n, err = s.master.TryWrite(p[:min(len(p), 4096)])
		job.written.Add(int64(n))
		s.writing.Add(-int64(n))
		p = p[n:]
		if err != nil {
			break
		}
		if n == 0 && len(p) > 0 {
			return false // full: writeLoop waits for room
		}
	}
	s.writing.Add(-(int64(len(job.data)) - job.written.Load()))
	job.done <- err // a terminal job has no signal and no stdin to close
	return true
}

// startJob notes a job's input as it starts to go out (flow control, the transcript).
// at holds the terminal's flags if the writer has just read them (mayWrite, which let
// the job go); startJob reads them otherwise, once for both notes. settled is
// noteInput's: the writer is the call that collects next.
func (s *Session) startJob(job *writeJob, at *termAttrs, settled bool) {
	job.started = true
	s.noteFlow(job.data, at)
	s.noteInput(job.data, s.inputHidden(at), settled)
}

// termAttrs is the terminal's flags as the writer reads them for one job, at most once:
// the look that decides whether the input may go now (mayWrite), the flow control it
// changes (noteFlow) and whether the transcript keeps it (inputHidden) then see the
// same flags, read just before the write: one tcgetattr where there were three. When
// mayWrite looked at the program too (echo on), the start reads them again after that
// look (two).
type termAttrs struct {
	a    pty.Attrs
	err  error
	read bool
}

// get returns the flags, reading them from s's terminal the first time.
func (t *termAttrs) get(s *Session) (pty.Attrs, error) {
	if !t.read {
		t.a, t.err = s.master.Attrs()
		t.read = true
	}
	return t.a, t.err
}

// waitExit records the leader's exit, then sweeps what is left of the session's tree and
// tears the session down. It is the session's exit path, started by exitReady once the
// leader's end is known (no goroutine of the session waits for it meanwhile). Owned by
// the session; ends after teardown.
func (s *Session) waitExit() {
	if s.m.holdExit != nil {
		s.m.holdExit()
	}
	s.unwatchHeld()
	var e reaper.Exit
	switch s.endHow {
	case endReported:
		e = s.endExit
	case endZombie:
		if ws, ok := reaper.ExitStatusOf(s.pid); ok {
			e.Status = ws
			e.Survivors = s.rp.Load().Survivors(s.uuid)
			// Reaping and sweeping happen aside: nothing on the exit path waits for them.
			go func() {
				if _, err := s.rp.Load().Release(s.uuid, s.pid); err != nil {
					s.m.log.Warn("release", "session", s.id, "err", err)
				}
			}()
			break
		}
		fallthrough
	default:
		var err error
		if e, err = s.rp.Load().Release(s.uuid, s.pid); err != nil {
			e.Err = err
		}
	}
	if e.Err != nil {
		// The reaper died with the program still running: nothing else will end what it
		// held, so the manager does, before the session is seen as exited; and the
		// reaper's death is a fault told with the result that reports this end.
		if errors.Is(e.Err, reaper.ErrDead) {
			s.m.reaperDied(s.rp.Load())
		}
		e.Survivors = s.sweepOrphaned()
	}
	s.mu.Lock()
	if e.Err != nil {
		s.exitErr = e.Err
		if errors.Is(e.Err, reaper.ErrDead) {
			s.exitErr = errReaperDied
		}
		s.exit = pty.ExitStatus{Code: -1, Signal: syscall.SIGKILL}
	} else {
		s.exit = pty.DecodeWaitStatus(e.Status)
	}
	if s.timedOut {
		s.exit = pty.ExitStatus{Code: 124}
	}
	s.exitedAt = time.Now()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	// Whatever outlived the leader is named; the reaper is killing it.
	s.mu.Lock()
	for _, p := range e.Survivors {
		if p.PID != s.pid {
			s.survivors = append(s.survivors, Survivor{PID: p.PID, Command: p.Command})
		}
	}
	s.mu.Unlock()
	s.noteExit()
	// Owners learn of the end before anyone can see the session as exited.
	s.m.noteEnded(s)
	s.m.mu.Lock()
	s.m.endedLocked(s)
	s.m.mu.Unlock()
	s.m.log.Debug("session ended", "session", s.id, "status", s.exitText())
	close(s.exited)
	// The detector's descriptors kept for the next look at the program have no use now.
	if t := s.probeTimer.Load(); t != nil {
		t.Reset(0)
	}
	// The call waiting for the exit (a collect) runs next, before the rest of this path:
	// Go runs the goroutine woken last first, so each one woken below (watchers, the
	// writer, the features' stop) would push that call behind the work of the recorder
	// and the release woken above, and on a busy machine its answer waited ~1 ms for them.
	runtime.Gosched()
	s.m.bump(s)
	// The sweep hangs the terminal up; if anything still holds it past the grace, stop
	// reading so the session's resources go.
	select {
	case <-s.drained:
	case <-time.After(reaper.DefaultGrace + time.Second):
		s.output.Close()
		<-s.drained
	}
	s.teardown()
}

// teardown stops the writer and closes the session's files. Idempotent.
func (s *Session) teardown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.quit:
		return
	default:
	}
	close(s.quit)
	s.output.Close()
	if s.stdin != nil {
		s.stdin.Close()
	}
	go s.stopFeatures()
	s.m.reg.remove(s)
}

// isExited reports whether the exit status is known.
func (s *Session) isExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// kill ends every process of the session and waits for the leader's exit status.
func (s *Session) kill(timedOut bool) []Survivor {
	// A session found while its start runs (a client closed meanwhile) is killed once its
	// program runs: a kill before the spawn would find nothing, and then wait for the
	// program to end on its own.
	s.waitSpawned()
	s.mu.Lock()
	if timedOut && !s.isExited() {
		s.timedOut = true
	}
	s.mu.Unlock()
	surv, err := s.rp.Load().Kill(s.uuid, reaper.DefaultGrace, true)
	if err != nil && !errors.Is(err, reaper.ErrDead) {
		s.m.log.Warn("kill", "session", s.id, "err", err)
	}
	<-s.exited
	out := make([]Survivor, 0, len(surv))
	for _, p := range surv {
		if p.PID != s.pid { // the leader is not its own survivor
			out = append(out, Survivor{PID: p.PID, Command: p.Command})
		}
	}
	return out
}

// exitFields fills the exit part of a result.
func (s *Session) exitFields() (state string, code *int, sig string, core, timedOut bool) {
	if !s.isExited() {
		return StateRunning, nil, "", false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exit.Signal != 0 {
		return StateExited, nil, s.exit.SignalName(), s.exit.CoreDumped, s.timedOut
	}
	c := s.exit.Code
	return StateExited, &c, "", false, s.timedOut
}

// touch marks the session used now.
func (s *Session) touch() {
	s.mu.Lock()
	s.lastUsed = time.Now()
	s.mu.Unlock()
}
