// Package broadcast is a session's output hub: one producer appends bytes to
// an offset-addressed ring, and any number of readers read from their own
// absolute offsets at their own pace.
//
// The producer never blocks on an ordinary reader: Write takes a short mutex,
// copies the bytes and wakes waiters. A reader that falls more than the
// retained window behind is neither waited for nor dropped; its next read
// starts at the oldest byte still held and reports exactly how many bytes it
// missed, so for every reader bytes read + bytes missed == End() once it
// reaches the end.
//
// One reader may instead hold the stream (Hold): the hub then never drops a
// byte that reader has not released, and Write waits for it rather than
// overwrite one. That is the reader that must see every byte (a session's
// transcript recorder); its lag backpressures the producer, as a slow real
// terminal backpressures the program writing to it.
package broadcast

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// DefaultRetain is the number of most recent bytes a hub keeps in memory when
// New is given retain <= 0.
const DefaultRetain = 4 << 20

// initialSize is the ring's first allocation; it doubles as output arrives,
// up to retain (and ReserveMax beyond it, see Reserve), so an idle or quiet session
// costs little.
const initialSize = 4 << 10

// ReserveMax is the most Reserve lends at once: more than a pty read returns (~4 KiB).
// A ring at its full size has this much room beyond the retain bytes readers see, which
// is what Reserve lends.
const ReserveMax = 8 << 10

var (
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("broadcast: write to closed hub")
	// ErrOffset is returned by ReadAt for an offset below 0 or beyond End().
	ErrOffset = errors.New("broadcast: offset out of range")
)

// closedChan is what Notify returns once the hub is closed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Hub is an append-only byte stream with absolute offsets that keeps its most
// recent retain bytes in memory. All methods are safe for concurrent use.
type Hub struct {
	retain int

	mu     sync.Mutex
	buf    []byte // the ring: offset o is at buf[o%len(buf)]; grows up to retain+ReserveMax
	start  int64  // oldest offset held
	end    int64  // one past the newest offset written
	closed bool
	notify chan struct{} // nil unless someone waits; closed and cleared by Write and Close
	at     []atWaiter    // NotifyBatch and NotifyBoundary waiters, woken once End reaches their boundary
	nat    atomic.Int32  // waiters in at that Flush wakes (NotifyBatch's), for its fast path

	// held: Write keeps every byte from hold on (see Hold). space is closed by
	// Release and Unhold when a Write waits for room (nil otherwise).
	held  bool
	hold  int64
	space chan struct{}
	lent  int // bytes the last Reserve lent, until Commit
	// wakeHolder, set with Hold, is called by a Write about to wait for room (see
	// HoldWake).
	wakeHolder func()
}

// atWaiter is a NotifyBatch or NotifyBoundary boundary and the channel of its waiters;
// flush says Flush wakes them too (NotifyBatch).
type atWaiter struct {
	off   int64
	ch    chan struct{}
	flush bool
}

// New returns an empty, open hub that keeps the most recent retain bytes
// (DefaultRetain if retain <= 0). No ring memory is allocated until the first
// Write.
func New(retain int) *Hub {
	if retain <= 0 {
		retain = DefaultRetain
	}
	return &Hub{retain: retain}
}

// Write appends a copy of p to the stream and wakes every waiter; an empty p
// does nothing. It is meant for the single producer and never blocks on
// ordinary readers: it holds the hub's mutex only to copy p (and, while the
// ring is below retain, to grow it by one allocation). Of a p longer than
// retain only the last retain bytes are kept, but End advances by len(p).
// While the stream is held (Hold), it instead writes p in pieces and waits
// before each until the holder has released enough room: it then blocks for
// as long as the holder lags a whole ring behind. After Close it returns 0,
// ErrClosed.
func (h *Hub) Write(p []byte) (int, error) {
	n := len(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, ErrClosed
	}
	if n == 0 {
		return 0, nil
	}
	if h.held {
		return h.writeHeld(p)
	}
	if n > h.retain {
		// The head of p passes by unseen; everything held before goes too.
		h.end += int64(n - h.retain)
		h.start = h.end
		p = p[n-h.retain:]
	}
	h.grow(int(h.end-h.start) + len(p))
	put(h.buf, h.end, p)
	h.end += int64(len(p))
	h.trim()
	h.wake()
	return n, nil
}

// trim drops from view what the ring no longer holds after a write: at most retain
// bytes stay readable (and fewer while the ring is smaller), so the ring's last
// ReserveMax bytes past End hold no readable byte. h.mu must be held.
func (h *Hub) trim() {
	h.start = max(h.start, h.end-int64(min(len(h.buf), h.retain)))
}

// Reserve lends the producer up to n bytes (at most ReserveMax and half of retain, fewer
// where the ring wraps) of the ring past End, to read its next output into; Commit then
// appends them to the stream without a copy. The bytes lent hold nothing any reader can
// see, so lending drops and waits for nothing. It returns nil, and the producer uses
// Write instead, while the ring is below its full size (a quiet stream keeps a small
// ring; one that printed about retain bytes has its full one), or once the hub is
// closed. Meant for the single producer, one reservation at a time: until Commit, it
// calls no Write and no other Reserve.
func (h *Hub) Reserve(n int) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || n <= 0 || len(h.buf) < h.retain+ReserveMax {
		return nil
	}
	// At most half of retain, as a held Write's piece, so a held Commit finds room once
	// the holder has caught up.
	p := span(h.buf, h.end, min(n, ReserveMax, max(h.retain/2, 1)))
	h.lent = len(p)
	return p
}

// Commit appends the first n bytes of what the last Reserve lent to the stream, as Write
// would have appended a copy of them, and wakes every waiter: while the stream is held
// it first waits, as Write does, until the holder has released room for them. It ends
// the reservation (n may be 0). After Close it returns 0, ErrClosed.
func (h *Hub) Commit(n int) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n < 0 || n > h.lent {
		panic(fmt.Sprintf("broadcast: Commit(%d) of a reservation of %d bytes", n, h.lent))
	}
	h.lent = 0
	if h.closed {
		return 0, ErrClosed
	}
	if n == 0 {
		return 0, nil
	}
	if err := h.waitRoom(n); err != nil {
		return 0, err
	}
	h.end += int64(n)
	h.trim()
	h.wake()
	return n, nil
}

// writeHeld is Write while the stream is held: each piece waits until it fits
// in the ring without overwriting a byte at or past the hold. h.mu is held
// (and released while waiting).
func (h *Hub) writeHeld(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), max(h.retain/2, 1))
		if err := h.waitRoom(k); err != nil {
			return n - len(p), err
		}
		h.grow(int(h.end-h.start) + k)
		put(h.buf, h.end, p[:k])
		h.end += int64(k)
		h.trim()
		p = p[k:]
		h.wake()
	}
	return n, nil
}

// waitRoom waits, while the stream is held, until k more bytes fit without dropping a
// byte at or past the hold. h.mu is held (and released while waiting). It returns
// ErrClosed if the hub was closed meanwhile.
func (h *Hub) waitRoom(k int) error {
	for h.held && h.end+int64(k)-h.hold > int64(h.retain) {
		// Wake every batch reader first: the holder may wait for a batch boundary
		// this write would have crossed.
		h.flushLocked(true)
		if h.wakeHolder != nil {
			h.wakeHolder()
		}
		if h.space == nil {
			h.space = make(chan struct{})
		}
		ch := h.space
		h.mu.Unlock()
		<-ch
		h.mu.Lock()
		if h.closed {
			return ErrClosed
		}
	}
	return nil
}

// Hold makes the hub keep every byte from offset off on until Release lets it
// go: Write waits rather than drop one. There is one hold per hub (a second
// Hold moves it); off must not be below Start. Meant to be called before the
// producer starts, by the reader that must see every byte.
func (h *Hub) Hold(off int64) error { return h.HoldWake(off, nil) }

// HoldWake is Hold for a holder that does not always run (one that ends once it has
// caught up and is started again when output comes): besides the hold, wake is called by
// a Write that must wait for the holder to release room, before it waits (after waking
// the batch readers), so that such a holder runs even when the Write that needs it has
// not returned. wake runs in the producer's goroutine with the hub's lock held: it must
// not block or call the hub.
func (h *Hub) HoldWake(off int64, wake func()) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off < h.start || off > h.end {
		return fmt.Errorf("%w: hold at %d not in [%d, %d]", ErrOffset, off, h.start, h.end)
	}
	h.held, h.hold, h.wakeHolder = true, off, wake
	return nil
}

// Release says the holder has consumed the bytes before off: Write may
// overwrite them, and a Write waiting for room goes on. An off at or below
// the current hold does nothing; one past End is taken as End.
func (h *Hub) Release(off int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held || off <= h.hold {
		return
	}
	h.hold = min(off, h.end)
	h.signalSpace()
}

// Unhold ends the hold: Write never waits again, and one waiting goes on.
func (h *Hub) Unhold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held, h.wakeHolder = false, nil
	h.signalSpace()
}

// signalSpace wakes a Write waiting for room. h.mu must be held.
func (h *Hub) signalSpace() {
	if h.space != nil {
		close(h.space)
		h.space = nil
	}
}

// grow makes the ring hold at least need bytes (capped at retain+ReserveMax, its full
// size), doubling from initialSize, and moves the held bytes to their places in the new
// ring.
func (h *Hub) grow(need int) {
	full := h.retain + ReserveMax
	if need <= len(h.buf) || len(h.buf) == full {
		return
	}
	size := len(h.buf)
	if size == 0 {
		size = min(initialSize, h.retain)
	}
	for size < need && size < h.retain {
		size = min(size*2, h.retain)
	}
	if size < need {
		size = full
	}
	nb := make([]byte, size)
	for off := h.start; off < h.end; {
		s := span(h.buf, off, int(h.end-off))
		put(nb, off, s)
		off += int64(len(s))
	}
	h.buf = nb
}

// Close marks the end of the stream and wakes every waiter. Readers still get
// the bytes held, then io.EOF. Calling it again does nothing.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	h.wake()
	h.signalSpace()
}

// wake closes the notify channel, if anyone asked for one. h.mu must be held.
func (h *Hub) wake() {
	if h.notify != nil {
		close(h.notify)
		h.notify = nil
	}
	if len(h.at) > 0 {
		h.wakeAt(func(w atWaiter) bool { return h.closed || h.end >= w.off })
	}
}

// wakeAt closes the channels of the waiters in h.at that done reports and forgets them.
// h.mu must be held.
func (h *Hub) wakeAt(done func(atWaiter) bool) {
	kept, flush := h.at[:0], 0
	for _, w := range h.at {
		if done(w) {
			close(w.ch)
			continue
		}
		kept = append(kept, w)
		if w.flush {
			flush++
		}
	}
	clear(h.at[len(kept):])
	h.at = kept
	h.nat.Store(int32(flush))
}

// BatchSize is the batch of NotifyBatch: a reader woken per batch during a flood wakes
// once per 256 KiB (about 2.5 ms of a pty flood) instead of once per read (~4 KiB).
const BatchSize = 256 << 10

// NotifyBatch returns a channel for a reader that wants to be woken per batch of output
// rather than per write. It is closed once End passes the batch boundary at least half a
// batch beyond off, when the writer calls Flush (it has nothing more for now), or at
// Close; it is already closed if End has passed that boundary. Boundaries are multiples of
// the batch size, so readers waiting on the same stretch of output are woken by the same
// Write. The batch is BatchSize, or an eighth of the ring's retain when that is smaller,
// so a woken reader still finds the batch in memory. Each call that must wait allocates a
// channel; an abandoned one is dropped at the next Flush, boundary or Close.
func (h *Hub) NotifyBatch(off int64) <-chan struct{} { return h.notifyAt(off, true) }

// NotifyBoundary is NotifyBatch for a reader that wants to be woken per batch even when
// the output pauses: its channel is closed once End passes the batch boundary, at Close,
// or when a Write of a held stream must wait for room (the holder may be waiting for the
// boundary that Write would cross); Flush does not close it. A reader that must not lag
// for long after a pause bounds its wait itself. An abandoned channel is dropped at its
// boundary or at Close.
func (h *Hub) NotifyBoundary(off int64) <-chan struct{} { return h.notifyAt(off, false) }

// notifyAt is NotifyBatch (flush) and NotifyBoundary.
func (h *Hub) notifyAt(off int64, flush bool) <-chan struct{} {
	b := int64(min(BatchSize, max(h.retain/8, 1)))
	at := ((off+b/2)/b + 1) * b
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.end >= at {
		return closedChan
	}
	// Waiters on the same boundary, woken alike, share a channel.
	for _, w := range h.at {
		if w.off == at && w.flush == flush {
			return w.ch
		}
	}
	ch := make(chan struct{})
	h.at = append(h.at, atWaiter{at, ch, flush})
	if flush {
		h.nat.Add(1)
	}
	return ch
}

// Flush wakes every NotifyBatch waiter, whatever its boundary (not the NotifyBoundary
// ones). The producer calls it when it has nothing more to write for now (it is about to
// wait for input), so that readers woken per batch see the end of a burst at once rather
// than when more output comes. It costs an atomic load when no NotifyBatch waiter waits.
func (h *Hub) Flush() {
	if h.nat.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushLocked(false)
}

// flushLocked is Flush with h.mu held; with all, it wakes the NotifyBoundary waiters too.
func (h *Hub) flushLocked(all bool) {
	h.wakeAt(func(w atWaiter) bool { return all || w.flush })
}

// Closed reports whether Close has been called.
func (h *Hub) Closed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// End returns the offset one past the last byte written.
func (h *Hub) End() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.end
}

// Start returns the oldest offset still held in memory; it is
// max(0, End()-retain).
func (h *Hub) Start() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.start
}

// ReadAt copies bytes from offset off into p without blocking. If off is
// below Start() the bytes from off to Start() have left memory: it reads from
// Start() instead and reports missed = Start()-off. With nothing to read at
// the end of the stream it returns (0, missed, io.EOF) once the hub is
// closed, else (0, missed, nil); wait with Notify (or NotifyBatch). An off below 0
// or beyond End() is an ErrOffset error.
func (h *Hub) ReadAt(p []byte, off int64) (n int, missed int64, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off < 0 || off > h.end {
		return 0, 0, fmt.Errorf("%w: %d not in [0, %d]", ErrOffset, off, h.end)
	}
	if off < h.start {
		missed, off = h.start-off, h.start
	}
	n = int(min(int64(len(p)), h.end-off))
	get(h.buf, off, p[:n])
	if n == 0 && off == h.end && h.closed {
		err = io.EOF
	}
	return n, missed, err
}

// HeldView is ReadAt without the copy, for the holder (Hold): it returns up to n bytes of
// the stream at off as p and, when they wrap around the end of the ring, q after it. off
// must be at or past the hold: those bytes stay in the ring, unchanged, until the holder
// releases them (Release, Unhold), since a Write waits rather than overwrite them and a
// ring that grows copies them to the new one without touching the old. So the holder may
// read p and q without the hub's lock until it releases past them, and must not write to
// them. With nothing to read at the end of the stream it returns io.EOF once the hub is
// closed, else no bytes and no error. An off below the hold (or with no hold) or beyond
// End is an ErrOffset error.
func (h *Hub) HeldView(off int64, n int) (p, q []byte, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held || off < h.hold || off > h.end {
		return nil, nil, fmt.Errorf("%w: held view at %d not in [%d, %d]", ErrOffset, off, h.hold, h.end)
	}
	k := int(min(int64(max(n, 0)), h.end-off))
	if k == 0 {
		if h.closed {
			err = io.EOF
		}
		return nil, nil, err
	}
	p = span(h.buf, off, k)
	if len(p) < k {
		q = span(h.buf, off+int64(len(p)), k-len(p))
	}
	return p, q, nil
}

// Notify returns a channel that is closed at the next Write or Close after
// the call, or one already closed if the hub is closed. To wait without
// missing a write, call Notify before reading and select on the channel when
// the read found nothing. The channel is only allocated when asked for, so a
// hub that nobody waits on costs Write nothing.
func (h *Hub) Notify() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.notifyLocked()
}

func (h *Hub) notifyLocked() chan struct{} {
	if h.closed {
		return closedChan
	}
	if h.notify == nil {
		h.notify = make(chan struct{})
	}
	return h.notify
}

// Tail returns a copy of the last min(n, End()-Start()) bytes held and the
// offset of its first byte. It is what a newly attached client repaints from.
func (h *Hub) Tail(n int) (data []byte, from int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := min(int64(max(n, 0)), h.end-h.start)
	data = make([]byte, k)
	get(h.buf, h.end-k, data)
	return data, h.end - k
}

// span returns the contiguous part of ring buf that starts at offset off,
// at most n bytes long.
func span(buf []byte, off int64, n int) []byte {
	i := int(off % int64(len(buf)))
	return buf[i:min(len(buf), i+n)]
}

// put copies p into ring buf at offset off, wrapping at the end.
func put(buf []byte, off int64, p []byte) {
	for len(p) > 0 {
		c := copy(span(buf, off, len(p)), p)
		p, off = p[c:], off+int64(c)
	}
}

// get copies len(p) bytes at offset off out of ring buf.
func get(buf []byte, off int64, p []byte) {
	for len(p) > 0 {
		c := copy(p, span(buf, off, len(p)))
		p, off = p[c:], off+int64(c)
	}
}
