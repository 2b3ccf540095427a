package screen

import (
	"bytes"
	"math"
	"sync"
	"sync/atomic"

	"github.com/ptyhub/ptyhub/broadcast"
	"github.com/ptyhub/ptyhub/internal/bufpool"
)

// Window bounds of the replay after a skip: rows×cols×8 bytes, clamped.
const (
	minWindow = 16 << 10
	maxWindow = 256 << 10
)

// window is how many of the most recent bytes a skip replays (at most): eight screens'
// worth of characters, which repaints every cell of a scrolling screen.
func window(rows, cols int) int64 {
	return min(max(int64(rows)*int64(cols)*8, minWindow), maxWindow)
}

// Model is the screen of one output stream (a broadcast.Hub), rendered on demand.
//
// The emulator is never on the producer's path and never runs ahead of need: it is
// created at the first demand (Snapshot, Repaint, a cursor position query) and then
// advanced, under the model's lock and in the caller's goroutine, from where it stopped
// up to the offset the demand needs. The emulator scrolls at only a few MB/s, so when it
// is more than two windows (see window) behind, or what it needs has left the hub's
// ring, it skips ahead: a cheap Scanner runs over the skipped bytes to keep the
// alternate-screen and cursor-visibility modes, and the emulator replays only the tail —
// from the last full-screen clear in the window if there is one, else from the first
// line start of the window. A demand therefore costs at most about two windows of
// emulation (~10 ms at 80×24), however much was printed.
//
// When given a reply function, the model also answers terminal queries: the answerer,
// a goroutine owned by the model, follows the hub with its own cursor and Scanner —
// which keeps up with any flood — and answers each query exactly once, when its last
// byte arrives; queries split across reads are recognised. A cursor position report
// advances the emulator to just after the query first, so it reports the real position.
// The answerer runs only while there is output it has not scanned: the stream's
// producer calls Kick after each Write, which starts it if none runs, and it ends once
// it has caught up (after a flood, once the flood ended), at the end of the stream, or
// at Close. So a quiet stream has no goroutine of the model. A small write (at most
// inlineScan bytes unscanned, the common case: a prompt, an echo, a REPL's answer) is
// scanned by Kick itself, in the producer's goroutine, and its queries answered there,
// so a write costs no goroutine and no wake-up of one; only a cursor position query,
// which needs the emulator, is left to the goroutine, which Kick then starts.
// AnsweredCh tells the writer of the program's input when the answers to the queries
// printed before an offset have been handed over, so that input typed after that
// output can follow them, as it does on a terminal.
type Model struct {
	hub   *broadcast.Hub
	reply func([]byte)
	quit  chan struct{} // closed by Close: ends an answerer waiting in a flood
	once  sync.Once
	// running and stopped are guarded by run (they sit here, where they pack with once).
	running bool // an answerer goroutine runs
	stopped bool // Close was called or the stream ended: none starts again
	// answered is the stream offset up to which the answerer has scanned, with every
	// query before it answered (its reply handed to reply); MaxInt64 when nothing is
	// owed (no answerer, or the stream ended).
	answered atomic.Int64
	// waits holds the channels of AnsweredCh's callers, each closed (and dropped) once
	// answered reaches its offset; nil when nobody waits, so that moving answered costs
	// an atomic load then. Changed under run.
	waits atomic.Pointer[[]answerWait]

	// run guards running, stopped and changes to waits; a leaf: nothing else is taken
	// while it is held.
	run sync.Mutex
	wg  sync.WaitGroup // the running answerer, waited for by Close
	// The answerer's cursor and scanner, used only by the running answerer (run hands
	// them from one to the next, and Kick's inline scan is one); asc is made by the
	// first run (nil until output came). pend holds the queries a run found but has not
	// answered yet (an inline scan's, handed to the goroutine with a cursor position
	// query among them).
	aoff int64
	asc  *Scanner
	pend []Event

	mu   sync.Mutex // guards the fields below; held while the emulator catches up
	term *Terminal  // nil until first needed and after the end
	buf  []byte
	off  int64 // the emulator has consumed the stream up to off
	// ms is the mode tracker, made with the emulator; it has scanned the stream up to
	// msOff (>= off).
	ms         *Scanner
	msOff      int64
	lastLF     int64    // offset just after the last '\n' the mode scanner saw
	rows, cols int      // the emulator's size (the size at off)
	resizes    []resize // size changes at offsets beyond off, in order
	closed     bool
	// im is the input-mode tracker, made by the first InputModes; it has scanned the
	// stream up to imOff.
	im         *Scanner
	imOff      int64
	final      *Snapshot // after Close: the last screen
	finalPaint []byte
}

// answerWait is a caller of AnsweredCh: ch is closed once answered reaches off.
type answerWait struct {
	off int64
	ch  chan struct{}
}

type resize struct {
	off        int64
	rows, cols int
}

// Follow returns the model of h's stream for a rows×cols terminal. With a non-nil reply
// the model answers every terminal query (see Answer) the stream contains, by calling
// reply (from the answerer goroutine, in stream order; reply must not block for long);
// the producer must then call Kick after each Write. During a flood the answerer reads
// per batch (broadcast.Hub.NotifyBatch): a query is then answered when the hub's
// producer next calls Flush (a session's reader does each time the output pauses), at
// the next batch boundary or at Close, whichever comes first; the flood ends at a Flush
// that finds the answerer caught up. Call Close once the stream ended. Follow starts no
// goroutine.
func Follow(h *broadcast.Hub, rows, cols int, reply func([]byte)) *Model {
	m := &Model{hub: h, reply: reply, quit: make(chan struct{}),
		rows: max(rows, 1), cols: max(cols, 1)}
	if reply == nil {
		m.answered.Store(math.MaxInt64) // no waiter yet
		m.stopped = true
	}
	return m
}

// inlineScan is the most unscanned output Kick scans itself instead of starting the
// answerer goroutine: a pty read of a prompt or a line is far smaller, and scanning it
// (a memchr for ESC) costs less than a goroutine's start and the thread wake-up it
// brings.
const inlineScan = 4 << 10

// Kick tells the model that the stream has new output: unless an answerer runs (which
// then finds the output before it stops), the model answers nothing, or it was closed,
// it scans the output itself when at most inlineScan bytes wait, and answers the
// queries there, calling reply in the caller's goroutine; otherwise (more output, or a
// cursor position query, whose answer needs the emulator) it starts the answerer
// goroutine. The producer calls it after each Write. Safe for concurrent use; reply must
// not call back into the producer's Write.
func (m *Model) Kick() { m.KickWrote(nil) }

// KickWrote is Kick for the producer that has just written p (its last Write, whole):
// when p is all the output not yet scanned, the inline scan reads p where it is instead
// of copying it out of the hub. The caller must not change p before KickWrote returns.
func (m *Model) KickWrote(p []byte) {
	m.run.Lock()
	if m.running || m.stopped {
		m.run.Unlock()
		return
	}
	m.running = true
	m.wg.Add(1)
	m.run.Unlock()
	if wait := m.hub.End() - m.aoff; wait <= inlineScan && m.scanInline(p, wait) {
		return
	}
	go m.answer()
}

// scanInline is Kick's scan of a small write, in the caller's goroutine, which holds
// the answerer's role (running): it scans what waits (wait bytes, the last of them
// wrote if that is all of them), answers the queries found unless one needs the
// emulator, and ends the role once caught up. It reports false when the goroutine must
// take over (the queries found are then in pend, and the role with them): a cursor
// position query, output that left the ring, or output written meanwhile.
func (m *Model) scanInline(wrote []byte, wait int64) bool {
	if m.asc == nil {
		m.asc = new(Scanner)
	}
	ended := false
	if wait > 0 && int64(len(wrote)) == wait {
		// The producer's last Write is all that waits: scanned in place.
		m.asc.Scan(wrote, m.aoff, m.keep)
		m.aoff += wait
		ended = m.hub.Closed() && m.hub.End() == m.aoff
	} else {
		bp := scanBufs.Get()
		buf := (*bp)[:inlineScan]
		for {
			n, missed, err := m.hub.ReadAt(buf, m.aoff)
			if missed > 0 {
				break // the goroutine resets the scanner and notes the gap
			}
			if n > 0 {
				m.asc.Scan(buf[:n], m.aoff, m.keep)
				m.aoff += int64(n)
				continue
			}
			ended = err != nil
			break
		}
		scanBufs.Put(bp)
	}
	for _, e := range m.pend {
		if e.Query == QueryCPR || e.Query == QueryExtCPR {
			return false
		}
	}
	m.answerPending()
	if ended {
		m.setAnswered(math.MaxInt64)
		m.idle(true)
		m.wg.Done()
		return true
	}
	if !m.idle(false) {
		return false
	}
	m.wg.Done()
	return true
}

// keep is the inline scan's event handler: queries wait in pend.
func (m *Model) keep(e Event) {
	if e.Kind == EventQuery {
		m.pend = append(m.pend, e)
	}
}

// answerPending answers the queries in pend, in order, and notes that everything up to
// the answerer's cursor is answered. Called by the answerer's role only.
func (m *Model) answerPending() {
	for _, e := range m.pend {
		m.onEvent(e)
	}
	clear(m.pend)
	m.pend = m.pend[:0]
	m.setAnswered(m.aoff)
}

// idle ends the answerer's run if the stream has no output it has not scanned (checked
// under run, so a Kick after a Write either sees the answerer running and the answerer
// then sees the output, or starts the next one), or if the model was closed; it reports
// whether the answerer ends.
func (m *Model) idle(ended bool) bool {
	m.run.Lock()
	defer m.run.Unlock()
	if ended {
		m.stopped = true
	} else if !m.stopped && m.hub.End() > m.aoff {
		return false
	}
	m.running = false
	return true
}

// scanBufs holds the scan buffers of the answerers and of the readers scanning a small
// read inline (a few: one per scan running).
var scanBufs = bufpool.New(32<<10, 4)

// answer is the answerer goroutine, started by Kick: it scans every byte of the stream
// once for queries, from where the last run stopped. It ends once caught up (see idle)
// outside a flood, at the end of the stream (then no other starts), or when quit is
// closed.
func (m *Model) answer() {
	defer m.wg.Done()
	if m.asc == nil {
		m.asc = new(Scanner)
	}
	m.answerPending() // what an inline scan left (see scanInline)
	sc, off := m.asc, &m.aoff
	// During a flood (see floodAfter) the answerer wakes per batch of output or when the
	// output pauses (broadcast.Hub.NotifyBatch), not per pty read: a wake (or a start)
	// costs more than scanning a read, and a program that prints a query and waits for
	// the answer has paused. Otherwise it ends when caught up and the next Write's Kick
	// starts the next run, so that a query is answered (and AnsweredTo, which the
	// waiting-for-input looks check, moves) as soon as it is printed.
	flood := false
	for {
		var notify <-chan struct{}
		if flood {
			notify = m.hub.NotifyBatch(*off)
		}
		round := int64(0)
		// The scan buffer is borrowed for the round and given back before waiting, so
		// an idle session's answerer holds none.
		bp := scanBufs.Get()
		buf := *bp
		for {
			n, missed, err := m.hub.ReadAt(buf, *off)
			if missed > 0 { // fell out of the ring: a query split across the gap is lost
				sc.Reset()
				*off += missed
				m.setAnswered(*off)
			}
			if n > 0 {
				sc.Scan(buf[:n], *off, m.onEvent)
				*off += int64(n)
				m.setAnswered(*off)
				round += int64(n)
				continue
			}
			if err != nil { // the end of the stream: nothing more is owed
				scanBufs.Put(bp)
				m.setAnswered(math.MaxInt64)
				m.idle(true)
				return
			}
			break
		}
		scanBufs.Put(bp)
		flood = floodAfter(flood, round)
		if !flood {
			if m.idle(false) {
				return
			}
			continue
		}
		if notify == nil {
			// The flood began in this round, which had no batch to wait for (notify is
			// taken at the top, for a flood only): take it at the offset reached, then
			// read what came since, before waiting.
			continue
		}
		select {
		case <-notify:
		case <-m.quit:
			m.idle(true)
			return
		}
	}
}

// floodRound is the round (bytes scanned after one wake) that starts a flood.
const floodRound = 16 << 10

// floodAfter says whether the answerer is in a flood after a round that scanned round
// bytes. A round of more than floodRound starts one; it ends only with a round that found
// nothing new: a wake by the producer's Flush with the output scanned, so the output has
// paused. In a flood the session's reader finds the pty empty now and then, and each
// time it calls Flush; ending the flood at the small round that follows (as a rule of
// "round > floodRound" does) put the answerer back to a wake per write until the next
// large round, and cost a wake per ~20 KiB of a pty flood instead of one per batch.
func floodAfter(flood bool, round int64) bool {
	return round > floodRound || flood && round > 0
}

func (m *Model) onEvent(e Event) {
	if e.Kind != EventQuery {
		return
	}
	row, col := 0, 0
	switch e.Query {
	case QueryWindow:
		m.mu.Lock()
		e.Rows, e.Cols = m.rows, m.cols
		for _, r := range m.resizes { // the size when the query was printed
			if r.off <= e.Off {
				e.Rows, e.Cols = r.rows, r.cols
			}
		}
		m.mu.Unlock()
	case QueryCPR, QueryExtCPR:
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return
		}
		m.advance(e.Off)
		row, col = m.term.Cursor()
		m.mu.Unlock()
	}
	if a := Answer(e, row+1, col+1); len(a) > 0 {
		m.reply(a)
	}
}

// InputModes returns the modes that change what the terminal's keys send (cursor keys,
// keypad), as of all output written to the hub before the call. It scans only what
// arrived since its last call, with its own scanner (the emulator may be far behind).
func (m *Model) InputModes() Modes {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.im == nil {
		m.im = new(Scanner)
	}
	var buf [4 << 10]byte
	for end := m.hub.End(); m.imOff < end; {
		n, missed, _ := m.hub.ReadAt(buf[:min(int64(len(buf)), end-m.imOff)], m.imOff)
		if missed > 0 { // left the ring: a sequence split across the gap is lost
			m.im.Reset()
			m.imOff += missed
			continue
		}
		if n == 0 {
			break
		}
		m.im.Scan(buf[:n], m.imOff, nil)
		m.imOff += int64(n)
	}
	return m.im.Modes()
}

// setAnswered moves answered to off and wakes the AnsweredCh callers it satisfies.
// Called by the answerer's role (and by Close once it ended).
func (m *Model) setAnswered(off int64) {
	m.answered.Store(off)
	if m.waits.Load() != nil {
		m.wake(off)
	}
}

// wake closes and drops the channels of the AnsweredCh callers waiting for off or less.
func (m *Model) wake(off int64) {
	m.run.Lock()
	defer m.run.Unlock()
	p := m.waits.Load()
	if p == nil {
		return
	}
	var kept []answerWait
	for _, w := range *p {
		if w.off <= off {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		m.waits.Store(nil)
	} else {
		m.waits.Store(&kept)
	}
}

// AnsweredCh returns a channel that is closed once AnsweredTo reaches off: every query
// printed before stream offset off has been answered (its reply handed to the reply
// function, in stream order), or the model answers nothing more (the stream ended, or
// Close). It is already closed when that holds at the call. The answerer never waits
// for anything but output to scan, so the channel closes as soon as the answerer has
// scanned up to off — during a flood, at the next batch of output or pause (see Follow).
// Each call that must wait allocates; an abandoned channel is dropped once the answerer
// passes off, or at Close. Safe for concurrent use.
func (m *Model) AnsweredCh(off int64) <-chan struct{} {
	if m.answered.Load() >= off {
		return closedCh
	}
	ch := make(chan struct{})
	m.run.Lock()
	var l []answerWait
	if p := m.waits.Load(); p != nil {
		l = append(l, *p...)
	}
	l = append(l, answerWait{off, ch})
	m.waits.Store(&l)
	m.run.Unlock()
	// The answerer may have moved answered between the first look and the store of
	// waits, without seeing a waiter: look again.
	if a := m.answered.Load(); a >= off {
		m.wake(a)
	}
	return ch
}

// closedCh is AnsweredCh's channel for an offset already answered.
var closedCh = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// AnsweredTo returns the stream offset up to which every terminal query has been
// answered (the reply handed to the reply function): a query in the stream before it is
// not owed. It is math.MaxInt64 when the model answers nothing (no reply function, or
// the answerer has ended). Safe for concurrent use.
func (m *Model) AnsweredTo() int64 { return m.answered.Load() }

// Resize records that the terminal became rows×cols after the output written so far.
func (m *Model) Resize(rows, cols int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if len(m.resizes) >= 32 { // keep the list short: apply what is pending
		m.advance(m.hub.End())
	}
	m.resizes = append(m.resizes, resize{off: m.hub.End(), rows: max(rows, 1), cols: max(cols, 1)})
}

// Snapshot returns the screen with all output written to the hub before the call
// applied. It may run the emulator for a few milliseconds (see Model).
func (m *Model) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.catchUp()
	if m.final != nil {
		return *m.final
	}
	return m.term.Snapshot()
}

// Repaint returns Terminal.Repaint of the screen with all output written to the hub
// before the call applied, and the hub offset it brings a terminal up to: a client that
// writes data and then the stream from next on shows exactly the program's output.
func (m *Model) Repaint() (data []byte, next int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.catchUp()
	if m.final != nil {
		return append([]byte(nil), m.finalPaint...), m.off
	}
	return m.term.Repaint(), m.off
}

// catchUp advances the emulator to the end of the stream; after Close it renders the
// final screen once and lets the emulator go. m.mu must be held.
func (m *Model) catchUp() {
	if m.final != nil {
		return
	}
	m.advance(m.hub.End())
	if m.closed {
		s := m.term.Snapshot()
		m.final, m.finalPaint = &s, m.term.Repaint()
		m.term.Close()
		m.term, m.buf = nil, nil
	}
}

// Close stops the answerer and waits for it, then keeps only the final screen (rendered
// now if the emulator ever ran, else at the first Snapshot or Repaint), releasing the
// emulator and its reply pump. Call it once the stream has ended. Calling it again does
// nothing.
func (m *Model) Close() {
	m.once.Do(func() {
		m.run.Lock()
		m.stopped = true
		m.run.Unlock()
		close(m.quit)
		m.wg.Wait()
		m.setAnswered(math.MaxInt64)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.closed = true
		if m.term != nil {
			m.catchUp()
		}
	})
}

// advance makes the emulator consume the stream up to target (or up to the end of what
// the hub holds). m.mu must be held.
func (m *Model) advance(target int64) {
	if m.term == nil {
		m.term = NewTerminal(m.rows, m.cols, nil)
		m.buf = make([]byte, 32<<10)
		m.ms = new(Scanner)
	}
	if target <= m.off {
		m.applyResizes(m.off)
		return
	}
	rows, cols := m.rows, m.cols
	if n := len(m.resizes); n > 0 {
		rows, cols = m.resizes[n-1].rows, m.resizes[n-1].cols
	}
	if m.off < m.hub.Start() || target-m.off > 2*window(rows, cols) {
		m.skip(target, window(rows, cols))
	}
	for m.off < target {
		m.applyResizes(m.off)
		lim := target
		if len(m.resizes) > 0 {
			lim = min(lim, m.resizes[0].off)
		}
		n, missed, _ := m.hub.ReadAt(m.buf[:min(int64(len(m.buf)), lim-m.off)], m.off)
		if missed > 0 { // overtaken by the producer while catching up
			m.off += missed
			if m.msOff < m.off {
				m.ms.Reset()
				m.msOff = m.off
			}
			continue
		}
		if n == 0 {
			break
		}
		chunk := m.buf[:n]
		if m.off+int64(n) > m.msOff {
			m.scanBytes(chunk[m.msOff-m.off:], nil)
		}
		m.term.Write(chunk)
		m.off += int64(n)
	}
	m.applyResizes(m.off)
}

// applyResizes applies the size changes recorded at or before offset off.
func (m *Model) applyResizes(off int64) {
	for len(m.resizes) > 0 && m.resizes[0].off <= off {
		r := m.resizes[0]
		m.resizes = m.resizes[1:]
		if r.rows != m.rows || r.cols != m.cols {
			m.term.Resize(r.rows, r.cols)
			m.rows, m.cols = r.rows, r.cols
		}
	}
}

// skip moves the emulator's position forward to where a replay of at most w bytes
// ending at target starts, keeping its modes (see Model). m.mu must be held.
func (m *Model) skip(target, w int64) {
	tail, win := m.readTail(target, w)
	m.scanTo(tail)
	from := tail
	if i := bytes.IndexByte(win[:len(win)/2], '\n'); i >= 0 {
		from = tail + int64(i) + 1
	} else if cols := int64(m.cols); cols > 0 {
		// No line start: keep the column phase of autowrapped text since the last one.
		if n := len(m.resizes); n > 0 {
			cols = int64(m.resizes[n-1].cols)
		}
		from = tail + ((m.lastLF-tail)%cols+cols)%cols
	}
	m.scanWin(win, tail, from, nil)
	modes := m.ms.Modes()
	clear := int64(-1)
	m.scanWin(win, tail, tail+int64(len(win)), func(e Event) {
		if e.Kind == EventClear {
			clear, modes = e.Off, e.Modes
		}
	})
	if clear >= 0 {
		from = clear
	}
	m.applyResizes(from)
	m.term.SetModes(modes)
	m.term.Write([]byte("\r")) // the replay starts at a line start (or its column phase)
	m.off = from
}

// scanWin runs the mode scanner over win (the stream from offset base) up to offset to,
// from where it stopped. m.mu must be held.
func (m *Model) scanWin(win []byte, base, to int64, fn func(Event)) {
	if m.msOff >= base && m.msOff < to {
		m.scanBytes(win[m.msOff-base:to-base], fn)
	}
}

// scanBytes runs the mode scanner over p, the stream at msOff, and notes the last line
// start. m.mu must be held.
func (m *Model) scanBytes(p []byte, fn func(Event)) {
	m.ms.Scan(p, m.msOff, fn)
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		m.lastLF = m.msOff + int64(i) + 1
	}
	m.msOff += int64(len(p))
}

// scanTo runs the mode scanner over the stream up to offset to. m.mu must be held.
func (m *Model) scanTo(to int64) {
	for m.msOff < to {
		n, missed, _ := m.hub.ReadAt(m.buf[:min(int64(len(m.buf)), to-m.msOff)], m.msOff)
		if missed > 0 {
			m.ms.Reset()
			m.msOff += missed
			continue
		}
		if n == 0 {
			return
		}
		m.scanBytes(m.buf[:n], nil)
	}
}

// readTail returns a copy of the stream from max(target-w, Start, off) to target, and
// the offset of its first byte. m.mu must be held.
func (m *Model) readTail(target, w int64) (int64, []byte) {
retry:
	tail := max(target-w, m.hub.Start(), m.off)
	win := make([]byte, target-tail)
	for n := 0; n < len(win); {
		k, missed, _ := m.hub.ReadAt(win[n:], tail+int64(n))
		if missed > 0 { // the producer overtook us (the ring wrapped meanwhile): again
			goto retry
		}
		if k == 0 {
			return tail, win[:n]
		}
		n += k
	}
	return tail, win
}
