package transcript

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ptyhub/ptyhub/internal/bufpool"
)

// Header is the first line of an asciicast v2 file.
type Header struct {
	Version   int               `json:"version"`
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Timestamp int64             `json:"timestamp"`
	Command   string            `json:"command,omitempty"`
	Title     string            `json:"title,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	// SessionID is ptyhub's short id of the session (never reused for a user), so a
	// session can be found by it after it left the server.
	SessionID int `json:"ptyhub_session_id,omitempty"`
	// Name is the session's name ("" when it has none), so a session can be found by
	// its name after it left the server.
	Name string `json:"ptyhub_name,omitempty"`
}

// Options configure a Writer.
type Options struct {
	// Cap is the size of the .cast past which output is no longer recorded
	// (default DefaultCap); markers still are. The spill stops at the same
	// point.
	Cap int64
	// Spill makes the recorded output readable back by ReadAt: the writer keeps an
	// index of its output events, and the exact bytes of the output ranges that hold
	// bytes that are not valid UTF-8 in <uuid>.raw (created with the first such range).
	Spill bool
	// SpillAfter, when positive, delays creating the spill until the output passes
	// that many bytes (a session whose output all stays in memory never holds a file
	// descriptor for it); the ranges to spill before are then read back with Backfill,
	// which reports how many bytes at off it no longer has (missed: a gap) and copies
	// the n bytes that follow them into p (as broadcast.Hub.ReadAt).
	SpillAfter int64
	Backfill   func(p []byte, off int64) (n int, missed int64)
}

// Writer writes one transcript. Its event methods (Output, Input, Hidden,
// Resize, Marker, Flush, Close) are for one goroutine; ReadAt and Release may
// be called from any goroutine. Writes go to a buffer flushed by Flush and
// Close; after the first disk error the writer stops writing (Err says why)
// and its methods go on doing nothing, so a full or broken disk costs the
// transcript and nothing else.
type Writer struct {
	path  string
	f     *os.File
	buf   *[]byte // events not yet written to f; from bufPool, returned by Flush
	start time.Time
	cap   int64

	size        int64   // bytes of the .cast written or buffered
	last        float64 // time of the last event (events never go back in time)
	next        int64   // the raw offset the next Output is expected at
	carry       []byte  // an incomplete UTF-8 character held for the next event (in carryBuf)
	carryBuf    [utf8.UTFMax]byte
	head        []byte // scratch: a carried character completed
	capped      bool
	notRecorded int64 // output bytes past the cap
	err         error
	closed      bool
	line        []byte      // scratch
	drop        PageDropper // the .cast's pages in the page cache

	// Reading back (Options.Spill), see archive.go. The fields up to smu belong to the
	// writing goroutine.
	readable   bool
	spillAfter int64
	backfill   func(p []byte, off int64) (int, int64)
	unspilled  bool  // spilled has ranges the spill's file (not created yet) lacks
	bufRaw     int64 // raw end of the output events written or buffered
	segEnd     int64 // raw end of the last output event recorded (-1: none yet)
	idxRaw     int64 // raw offset of the last index entry
	spillEnd   int64 // raw end of the last spilled range (-1: none yet)

	smu      sync.RWMutex // guards the fields below; Release closes and deletes the spill
	spill    *os.File
	shut     bool // the spill's file was closed by Close; ReadAt opens it again
	released bool
	idx      []indexEntry // output events to start decoding at, in raw (and file) order
	spilled  [][2]int64   // raw ranges whose exact bytes are (or go) in the spill, in order
	gaps     [][2]int64   // ranges of spilled whose bytes never reached the spill's file
	durable  atomic.Int64 // recorded output before it is in the files (ReadAt serves it)
	hmu      sync.Mutex   // guards hint; a leaf of the lock order
	hint     indexEntry   // where the last ReadAt stopped decoding (an event's start)
}

// Create creates the transcript of session uuid in dir (created 0700 and
// checked by EnsureDir) and writes its header; the file is new (an existing
// one is an error), 0600, and locked until Close. h.Version is set to 2 and
// h.Timestamp to start when zero; event times count from start.
func Create(dir, uuid string, h Header, start time.Time, o Options) (*Writer, error) {
	if !validUUID(uuid) {
		return nil, fmt.Errorf("transcript: bad session id %q", uuid)
	}
	if err := EnsureDir(dir); err != nil {
		return nil, err
	}
	if o.Cap <= 0 {
		o.Cap = DefaultCap
	}
	w := &Writer{path: Path(dir, uuid), start: start, cap: o.Cap, segEnd: -1, spillEnd: -1}
	f, err := openExclusive(w.path, os.O_WRONLY)
	if err != nil {
		return nil, fmt.Errorf("transcript: create: %w", err)
	}
	w.f = f
	if o.Spill {
		w.readable = true
		if o.SpillAfter > 0 && o.Backfill != nil {
			w.spillAfter, w.backfill = o.SpillAfter, o.Backfill
		}
	}
	h.Version = 2
	if h.Timestamp == 0 {
		h.Timestamp = start.Unix()
	}
	hb, _ := json.Marshal(h)
	w.put(append(hb, '\n'))
	if err := w.Flush(); err != nil {
		w.Release()
		f.Close()
		os.Remove(w.path)
		return nil, err
	}
	return w, nil
}

// Path returns the file's path.
func (w *Writer) Path() string { return w.path }

// spillPath is the raw spill's path beside the transcript (SpillPath), made when needed:
// most transcripts never have a spill.
func (w *Writer) spillPath() string { return strings.TrimSuffix(w.path, Ext) + SpillExt }

// Err returns the first write error, after which nothing more was written.
func (w *Writer) Err() error { return w.err }

// Output records p, the output bytes at raw offset off. An off past the end
// of the previous Output means bytes were lost before they reached the
// writer: a marker says how many.
func (w *Writer) Output(t time.Time, off int64, p []byte) {
	if w.closed {
		return
	}
	if off > w.next {
		lost := off - w.next
		w.flushCarry(t)
		w.Marker(t, fmt.Sprintf("[%d bytes of output lost: the transcript fell behind]", lost))
		w.next = off
	} else if off < w.next { // already recorded
		skip := w.next - off
		if skip >= int64(len(p)) {
			return
		}
		p, off = p[skip:], w.next
	}
	w.next = off + int64(len(p))
	if w.capped || w.err != nil {
		w.notRecorded += int64(len(p))
		return
	}
	data, from := p, off
	if c := w.carry; len(c) > 0 {
		from -= int64(len(c))
		w.carry = nil
		if k := completes(c, p); k > 0 {
			// The carried character is completed by p's first k bytes: the event is
			// that character, then the rest of p encoded from where it is (not copied
			// after the carry).
			w.head = append(append(w.head[:0], c...), p[:k]...)
			p = p[k:]
			if k := incompleteTail(p); k > 0 {
				w.carry = w.carryBuf[:copy(w.carryBuf[:], p[len(p)-k:])]
				p = p[:len(p)-k]
			}
			w.output(t, from, w.head, p)
			w.maybeCreateSpill()
			return
		} else {
			data = append(c[:len(c):len(c)], p...) // a new array: c is w.carryBuf
		}
	}
	if k := incompleteTail(data); k > 0 {
		w.carry = w.carryBuf[:copy(w.carryBuf[:], data[len(data)-k:])]
		data = data[:len(data)-k]
	}
	if len(data) > 0 {
		w.output(t, from, nil, data)
	}
	w.maybeCreateSpill()
}

// maybeCreateSpill creates the spill's file once the output passed Options.SpillAfter
// if ranges wait for it.
func (w *Writer) maybeCreateSpill() {
	if w.unspilled && w.next > w.spillAfter {
		w.createSpill(w.next)
	}
}

// output writes the "o" event of data, the output at raw offset from, and, for ReadAt,
// indexes it and spills its exact bytes when the event could not hold them.
//
// The event's data is head then data (head: a carried character completed, else nil).
func (w *Writer) output(t time.Time, from int64, head, data []byte) {
	at := w.size
	put, invalid := w.eventForce(t, 'o', head, data, false)
	if !put || !w.readable {
		return
	}
	end := from + int64(len(head)) + int64(len(data))
	if from != w.segEnd || from-w.idxRaw >= indexEvery {
		w.smu.Lock()
		if !w.released {
			w.idx = append(w.idx, indexEntry{raw: from, cast: at})
		}
		w.smu.Unlock()
		w.idxRaw = from
	}
	w.segEnd = end
	if invalid { // in data: head is a valid character
		if len(head) > 0 && w.spillEnd == from {
			w.spillRange(head, from) // the range goes on through it (spillInvalid)
		}
		w.spillInvalid(data, from+int64(len(head)))
	}
	w.bufRaw = end
	if w.buf == nil || len(*w.buf) == 0 { // written straight through
		w.durable.Store(end)
	}
}

// Settled returns the output offset below which the writer no longer needs the bytes
// from anywhere else: what it recorded is in its files (ReadAt can serve it), and what
// it will not record (past the cap, after a write error) it never will. A held hub may
// let go of the bytes before it. For the writing goroutine.
func (w *Writer) Settled() int64 {
	if !w.readable || w.capped || w.err != nil || w.closed {
		return w.next
	}
	return w.durable.Load()
}

// Input records input typed into the program.
func (w *Writer) Input(t time.Time, p []byte) {
	if len(p) > 0 {
		w.event(t, 'i', p)
	}
}

// Hidden records that n bytes were typed with echo off, without the bytes.
func (w *Writer) Hidden(t time.Time, n int) {
	w.Marker(t, fmt.Sprintf("[%d bytes of hidden input]", n))
}

// Resize records a new window size.
func (w *Writer) Resize(t time.Time, cols, rows int) {
	w.event(t, 'r', []byte(strconv.Itoa(cols)+"x"+strconv.Itoa(rows)))
}

// Marker records an "m" event. Markers are written past the cap.
func (w *Writer) Marker(t time.Time, text string) {
	w.eventForce(t, 'm', nil, []byte(text), true)
}

// bufSize is the most events a Writer buffers before writing them to its file.
const bufSize = 64 << 10

// bufPool holds event buffers. A Writer takes one when it buffers an event and gives it
// back on Flush, so an idle session's transcript holds no buffer.
var bufPool = bufpool.New(bufSize, 4)

// Flush writes buffered events to the file and gives the buffer back to the pool.
func (w *Writer) Flush() error {
	w.writeBuf()
	if w.buf != nil {
		*w.buf = (*w.buf)[:0]
		bufPool.Put(w.buf)
		w.buf = nil
	}
	return w.err
}

// writeBuf writes the buffered events to the file, keeping the (emptied) buffer.
func (w *Writer) writeBuf() {
	if w.buf == nil || len(*w.buf) == 0 {
		return
	}
	b := *w.buf
	*w.buf = b[:0]
	if w.err != nil {
		return
	}
	if _, err := w.f.Write(b); err != nil {
		w.fail(err)
		return
	}
	w.drop.Wrote(w.f, int64(len(b)))
	w.durable.Store(w.bufRaw)
}

// Close writes what is pending, a marker for output not recorded past the
// cap, and the end marker EndPrefix+status+"]", then closes the .cast and
// the spill's file (so a finished transcript holds no file descriptor). The
// output stays readable (ReadAt opens the files per read) until Release. It
// returns the first write error.
func (w *Writer) Close(t time.Time, status string) error {
	if w.closed {
		return w.err
	}
	w.flushCarry(t)
	if w.notRecorded > 0 && w.capped {
		w.Marker(t, fmt.Sprintf("[%d bytes of output were not recorded past the cap]", w.notRecorded))
	}
	w.Marker(t, EndPrefix+status+"]")
	w.Flush()
	w.closed = true
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("transcript: close: %w", err)
	}
	w.smu.Lock()
	if w.spill != nil {
		w.spill.Close()
		w.spill, w.shut = nil, true
	}
	w.smu.Unlock()
	return w.err
}

// flushCarry writes a held incomplete character (it will never be completed
// here: it becomes U+FFFD).
func (w *Writer) flushCarry(t time.Time) {
	if len(w.carry) > 0 {
		c := w.carry
		w.carry = nil
		w.output(t, w.next-int64(len(c)), nil, c)
	}
}

func (w *Writer) event(t time.Time, code byte, data []byte) {
	w.eventForce(t, code, nil, data, false)
}

// eventForce appends one event line; past the cap only forced events (markers)
// are written, and the first one past it is preceded by the cap marker. It
// reports whether the line was written (or buffered), and whether data held bytes
// that are not valid UTF-8 (written as U+FFFD).
func (w *Writer) eventForce(t time.Time, code byte, head, data []byte, force bool) (put, invalid bool) {
	if w.closed || w.err != nil {
		return false, false
	}
	sec := max(t.Sub(w.start).Seconds(), w.last)
	w.last = sec
	line := append(w.line[:0], '[')
	line = strconv.AppendFloat(line, sec, 'f', 6, 64)
	line = append(line, ',', ' ', '"', code, '"', ',', ' ')
	line, invalid = appendJSONString(line, head, data)
	line = append(line, ']', '\n')
	w.line = line[:0]
	if !force && !w.capped && w.size+int64(len(line)) > w.cap {
		w.capped = true
		if code == 'o' {
			w.notRecorded += int64(len(data))
		}
		w.Marker(t, fmt.Sprintf("[transcript cap of %d bytes reached: recording stopped]", w.cap))
		return false, false
	}
	if w.capped && !force {
		if code == 'o' {
			w.notRecorded += int64(len(data))
		}
		return false, false
	}
	w.put(line)
	return w.err == nil, invalid
}

// put buffers b (or, when it is as large as the buffer, writes it straight through).
// After the first write error it does nothing.
func (w *Writer) put(b []byte) {
	if w.err != nil {
		return
	}
	if w.buf == nil {
		w.buf = bufPool.Get()
		*w.buf = (*w.buf)[:0]
	}
	if len(*w.buf)+len(b) > bufSize {
		w.writeBuf()
		if w.err != nil {
			return
		}
	}
	if len(b) >= bufSize {
		n, err := w.f.Write(b)
		w.size += int64(n)
		if err != nil {
			w.fail(err)
			return
		}
		w.drop.Wrote(w.f, int64(n))
		return
	}
	*w.buf = append(*w.buf, b...)
	w.size += int64(len(b))
}

// fail records the first disk error and tries once to leave a marker that
// says so, on a line of its own, straight to the file. A write the disk took only in
// part (it filled in the middle of a buffer of events) is cut back first to the end of
// the last whole write, so the file holds no event cut short (an invalid line for every
// reader of the format); the room that frees is often enough for the marker.
func (w *Writer) fail(err error) {
	if w.err != nil {
		return
	}
	w.err = fmt.Errorf("transcript %s: %w", w.path, err)
	var line []byte
	if w.f.Truncate(w.drop.end) == nil {
		if _, err := w.f.Seek(w.drop.end, io.SeekStart); err != nil {
			return
		}
		line = append(line, '[')
	} else {
		line = append(line, "\n["...)
	}
	line = strconv.AppendFloat(line, w.last, 'f', 6, 64)
	line = append(line, `, "m", `...)
	line, _ = appendJSONString(line, nil, []byte("[transcript write failed: "+err.Error()+"; recording stopped]"))
	line = append(line, "]\n"...)
	w.f.Write(line)
}

// completes returns how many bytes at the start of p complete the incomplete character
// c (an incompleteTail) into a valid one, 0 when p does not (too short, or the result is
// not valid UTF-8).
func completes(c, p []byte) int {
	var b [utf8.UTFMax]byte
	n := copy(b[:], c)
	for k := 1; n < len(b) && k <= len(p); k++ {
		b[n] = p[k-1]
		n++
		if utf8.FullRune(b[:n]) {
			if r, size := utf8.DecodeRune(b[:n]); r == utf8.RuneError && size <= 1 || size != n {
				return 0
			}
			return k
		}
	}
	return 0
}

// incompleteTail returns the length of an incomplete but so far valid UTF-8
// character at the end of p (0 if there is none).
func incompleteTail(p []byte) int {
	for i := 1; i <= 3 && i <= len(p); i++ {
		b := p[len(p)-i]
		switch {
		case b < 0x80:
			return 0
		case b >= 0xC0:
			if !utf8.FullRune(p[len(p)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends data as a JSON string: valid UTF-8 as is, control
// characters escaped, each invalid byte as the escape \ufffd (and only those: a U+FFFD
// printed is written as itself, so decodeBody can tell them apart). It reports
// whether data held an invalid byte. The string's content is head then data, each
// starting on a character boundary (head: nil, or a character carried from the last
// chunk and completed), so data is encoded where it is, not copied after head.
func appendJSONString(dst, head, data []byte) ([]byte, bool) {
	dst = append(dst, '"')
	dst, bad := appendJSONBody(dst, head)
	dst, invalid := appendJSONBody(dst, data)
	return append(dst, '"'), bad || invalid
}

// appendJSONBody appends data as the content of a JSON string (appendJSONString) and
// reports whether it held an invalid byte; data must start on a character boundary.
func appendJSONBody(dst, data []byte) ([]byte, bool) {
	invalid := false
	start := 0
	for i := 0; i < len(data); {
		i = plainRun(data, i)
		if i >= len(data) {
			break
		}
		b := data[i]
		if b < utf8.RuneSelf {
			dst = append(dst, data[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, data[start:i]...)
			dst = append(dst, `\ufffd`...)
			invalid = true
			i++
			start = i
			continue
		}
		i += size
	}
	return append(dst, data[start:]...), invalid
}

// plainRun returns the end of the run of bytes from i that a JSON string holds as they
// are (printable ASCII but '"' and '\\'), 32 then eight bytes at a time while it can.
//
// A word's test is one mask of high bits. A byte below 0x20 borrows in w - 0x20 (per
// byte); a byte equal to '"' or '\\' becomes 0 in its XOR and borrows in the - 1; a
// byte of 0x80 or more keeps its high bit through both XORs, and - 1 clears it only
// from 0x80, which the two XORs cannot both give. A borrow carried into the byte above
// comes only from a flagged byte, and a flagged word is looked at again a byte at a
// time, so the mask is never 0 for a word that holds a byte to escape.
func plainRun(p []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i+32 <= len(p) { // four words, one test (a long run: a flood)
		b := p[i : i+32]
		w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		w2, w3 := binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
		if ((w0-ones*0x20)|((w0^ones*'"')-ones)|((w0^ones*'\\')-ones)|
			(w1-ones*0x20)|((w1^ones*'"')-ones)|((w1^ones*'\\')-ones)|
			(w2-ones*0x20)|((w2^ones*'"')-ones)|((w2^ones*'\\')-ones)|
			(w3-ones*0x20)|((w3^ones*'"')-ones)|((w3^ones*'\\')-ones))&highs != 0 {
			break
		}
		i += 32
	}
	for i+8 <= len(p) {
		w := binary.LittleEndian.Uint64(p[i:])
		if ((w-ones*0x20)|((w^ones*'"')-ones)|((w^ones*'\\')-ones))&highs != 0 {
			break
		}
		i += 8
	}
	for i < len(p) {
		b := p[i]
		if b < 0x20 || b == '"' || b == '\\' || b >= utf8.RuneSelf {
			break
		}
		i++
	}
	return i
}
