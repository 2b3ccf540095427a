package transcript

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"unicode/utf8"
)

// Reading recorded output back (Writer.ReadAt). The .cast holds every output byte that
// is valid UTF-8 exactly: an "o" event's data decodes to the bytes printed, and the
// events of the output follow one another at consecutive raw offsets (an incomplete
// character at the end of one chunk is carried into the next event). So the writer
// keeps a sparse index of its output events — the raw offset where an event's data
// starts and the event's byte offset in the .cast, one entry per indexEvery bytes of
// output and one after each discontinuity (output lost before it reached the writer) —
// and ReadAt decodes the .cast from the indexed event at or before the offset asked.
//
// An event whose data held bytes that are not valid UTF-8 was written with U+FFFD for
// them (the escape \ufffd, one per byte): the exact bytes of the ranges that hold them
// (spillInvalid) go to the raw spill <uuid>.raw at their raw offsets, a sparse file,
// and ReadAt reads those ranges from there. Output that is all valid UTF-8 never
// creates the spill.

// indexEvery is the output between two index entries: ReadAt decodes at most this much
// (plus one event) before it reaches the offset asked, and the index costs 16 bytes per
// indexEvery of output (4,096 entries, 64 KiB, at the default cap).
const indexEvery = 64 << 10

// indexEntry says that an "o" event whose data starts at raw offset raw is the line at
// byte offset cast of the .cast.
type indexEntry struct{ raw, cast int64 }

// Release forgets what ReadAt reads from, and closes and deletes the raw spill; ReadAt
// then returns 0 (the .cast stays). Safe to call more than once, from any goroutine.
func (w *Writer) Release() {
	w.smu.Lock()
	defer w.smu.Unlock()
	if w.released {
		return
	}
	w.released = true
	if w.spill != nil || w.shut {
		os.Remove(w.spillPath())
		if w.spill != nil {
			w.spill.Close()
		}
		w.spill, w.shut = nil, false
	}
	w.idx, w.spilled, w.gaps = nil, nil, nil
}

// ReadAt copies recorded output bytes at raw offset off into p and returns how many: 0
// when the writer does not hold off (not opened with Options.Spill, released, not in
// its files yet, lost before it reached the writer, or past the cap). It may return
// fewer than len(p) bytes where the bytes read next come from the other file (the .cast
// or the spill): ask again at the offset that follows. Safe for concurrent use with the
// writing goroutine, and after Close.
func (w *Writer) ReadAt(p []byte, off int64) int {
	if len(p) == 0 || off < 0 || !w.readable {
		return 0
	}
	w.smu.RLock()
	if w.released {
		w.smu.RUnlock()
		return 0
	}
	end := w.durable.Load()
	if off >= end {
		w.smu.RUnlock()
		return 0
	}
	p = p[:min(int64(len(p)), end-off)]
	i := sort.Search(len(w.spilled), func(i int) bool { return w.spilled[i][1] > off })
	if i < len(w.spilled) && w.spilled[i][0] <= off { // in the spill
		defer w.smu.RUnlock()
		return w.readSpill(p[:min(int64(len(p)), w.spilled[i][1]-off)], off)
	}
	if i < len(w.spilled) { // the next spilled range ends what the .cast serves
		p = p[:min(int64(len(p)), w.spilled[i][0]-off)]
	}
	// The index only grows (its entries never change), so a copy of its slice can be
	// read without the lock, which the writer takes to add to it.
	idx := w.idx
	w.smu.RUnlock()
	return w.readCast(idx, p, off)
}

// readSpill reads p at off from the spill. smu is read-locked.
func (w *Writer) readSpill(p []byte, off int64) int {
	for _, g := range w.gaps {
		if off >= g[0] && off < g[1] {
			return 0
		}
		if g[0] > off && g[0] < off+int64(len(p)) {
			p = p[:g[0]-off]
		}
	}
	f := w.spill
	if f == nil {
		if !w.shut { // not created yet: the hub still holds these bytes
			return 0
		}
		var err error
		if f, err = os.Open(w.spillPath()); err != nil { // closed with the transcript
			return 0
		}
		defer f.Close()
	}
	n, _ := f.ReadAt(p, off)
	return n
}

// readCast reads p at off from the .cast, decoding its output events from the entry of
// idx (the index) at or before off. The caller made sure that p lies in what durable
// covers and holds no spilled byte.
func (w *Writer) readCast(idx []indexEntry, p []byte, off int64) int {
	j := sort.Search(len(idx), func(j int) bool { return idx[j].raw > off })
	if j == 0 {
		return 0
	}
	from := idx[j-1]
	w.hmu.Lock()
	if h := w.hint; h.raw <= off && h.raw > from.raw {
		from = h // a later event of the same stretch: where the last read stopped
	}
	w.hmu.Unlock()
	f, err := os.Open(w.path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := scratchPool.Get().(*castScratch)
	defer scratchPool.Put(sc)
	sc.br.Reset(io.NewSectionReader(f, from.cast, 1<<62))
	pos, at := from.raw, from.cast
	n := 0
	for n < len(p) {
		if j < len(idx) && at == idx[j].cast { // an indexed event: a discontinuity?
			if idx[j].raw != pos {
				if n == 0 && off >= pos && off < idx[j].raw {
					return 0 // off was lost before it reached the writer
				}
				break
			}
			j++
		}
		if sc.line, err = readLine(sc.br, sc.line[:0]); err != nil {
			break
		}
		evAt := at
		at += int64(len(sc.line))
		body, ok := outputBody(sc.line)
		if !ok {
			continue // another kind of event
		}
		// Decoded only as far as p needs: a cut event fills p, which ends the loop.
		if sc.data, ok = decodeBody(sc.data[:0], body, off+int64(len(p))-pos); !ok {
			break
		}
		if evEnd := pos + int64(len(sc.data)); evEnd > off+int64(n) {
			n += copy(p[n:], sc.data[off+int64(n)-pos:])
			if n == len(p) {
				w.hmu.Lock()
				w.hint = indexEntry{raw: pos, cast: evAt}
				w.hmu.Unlock()
				break
			}
		}
		pos += int64(len(sc.data))
	}
	return n
}

// castScratch is what a readCast decodes with; scratchPool keeps them between reads.
type castScratch struct {
	br         *bufio.Reader
	line, data []byte
}

var scratchPool = sync.Pool{New: func() any { return &castScratch{br: bufio.NewReaderSize(nil, 64<<10)} }}

// readLine appends the next line of br, its newline included, to line; a last line
// without its newline is an error (it is still being written).
func readLine(br *bufio.Reader, line []byte) ([]byte, error) {
	for {
		b, err := br.ReadSlice('\n')
		line = append(line, b...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// outputBody returns the JSON string's content (between its quotes) of an "o" event line
// as the writer wrote it, [time, "o", "data"] and a newline; ok is false for another
// event.
func outputBody(line []byte) (body []byte, ok bool) {
	const head, tail = `, "o", "`, "\"]\n"
	i := bytes.IndexByte(line, ',')
	if i < 0 || !bytes.HasPrefix(line[i:], []byte(head)) || !bytes.HasSuffix(line, []byte(tail)) ||
		len(line) < i+len(head)+len(tail) {
		return nil, false
	}
	return line[i+len(head) : len(line)-len(tail)], true
}

// decodeBody appends the bytes of body, the content of a JSON string as appendJSONString
// wrote it, to dst, stopping once dst holds limit bytes or more (limit < 0: all of
// them). An escaped \ufffd (an invalid byte) is one byte 0xFF: the exact byte is in
// the spill. ok is false for what appendJSONString never writes.
func decodeBody(dst, body []byte, limit int64) ([]byte, bool) {
	for len(body) > 0 {
		if limit >= 0 && int64(len(dst)) >= limit {
			return dst, true
		}
		k := bytes.IndexByte(body, '\\')
		if k < 0 {
			return append(dst, body...), true
		}
		dst = append(dst, body[:k]...)
		body = body[k:]
		if len(body) < 2 {
			return dst, false
		}
		switch c := body[1]; c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			if len(body) < 6 {
				return dst, false
			}
			var r rune
			for _, h := range body[2:6] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return dst, false
				}
			}
			if r == utf8.RuneError {
				dst = append(dst, 0xFF)
			} else {
				dst = utf8.AppendRune(dst, r)
			}
			body = body[6:]
			continue
		default:
			return dst, false
		}
		body = body[2:]
	}
	return dst, true
}

// spillJoin is the most valid output between two invalid bytes that one spilled range
// takes along rather than starting another: binary output makes one range, not one per
// invalid byte, and text with a few stray bytes spills little more than them.
const spillJoin = 4 << 10

// spillInvalid spills the ranges of data, the output at raw offset from, that hold its
// bytes that are not valid UTF-8 (each range from one such byte to the last one that
// follows it with less than spillJoin valid bytes between). A range that comes that
// close to the start of data and continues one that ended there starts at the start,
// and one that comes that close to the end ends at the end, so output that is not text
// makes one range however it was cut into events. For the writing goroutine.
func (w *Writer) spillInvalid(data []byte, from int64) {
	start := nextInvalid(data, 0)
	if start < spillJoin && start < len(data) && w.spillEnd == from {
		start = 0
	}
	for start < len(data) {
		end := start + 1
		for {
			k := nextInvalid(data, end)
			if k >= len(data) && len(data)-end < spillJoin {
				end = len(data)
			}
			if k >= len(data) || k-end >= spillJoin {
				w.spillRange(data[start:end], from+int64(start))
				start = k
				break
			}
			end = k + 1
		}
	}
}

// nextInvalid returns the index of the first byte of p from i on that is not part of
// valid UTF-8 (as appendJSONString sees it), len(p) when there is none.
func nextInvalid(p []byte, i int) int {
	for i < len(p) {
		if p[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(p)
}

// spillRange records that the exact bytes of data, the output at raw offset from, go to
// the spill, and writes them there (once the output passed Options.SpillAfter, else
// createSpill will, from the backfill). For the writing goroutine.
func (w *Writer) spillRange(data []byte, from int64) {
	end := from + int64(len(data))
	w.spillEnd = end
	w.smu.Lock()
	if w.released {
		w.smu.Unlock()
		return
	}
	if n := len(w.spilled); n > 0 && w.spilled[n-1][1] == from {
		w.spilled[n-1][1] = end
	} else {
		w.spilled = append(w.spilled, [2]int64{from, end})
	}
	created := w.spill != nil || w.shut
	w.smu.Unlock()
	if !created {
		w.unspilled = true
		if w.backfill != nil && end <= w.spillAfter {
			return // the hub holds it; createSpill copies it
		}
		w.createSpill(from)
	}
	// A read lock: writing at new offsets does not disturb readers; Release (the write
	// lock) may close the spill at any time.
	w.smu.RLock()
	if w.spill != nil {
		if _, err := w.spill.WriteAt(data, from); err != nil {
			w.smu.RUnlock()
			w.spillFailed(err)
			return
		}
	}
	w.smu.RUnlock()
}

// createSpill creates the spill's file and writes the spilled ranges before upTo into
// it, read back with the backfill (what it no longer has becomes a gap). For the writing
// goroutine.
func (w *Writer) createSpill(upTo int64) {
	w.unspilled = false
	w.smu.RLock()
	skip := w.released || w.spill != nil || w.shut
	ranges := append([][2]int64(nil), w.spilled...)
	w.smu.RUnlock()
	if skip {
		return
	}
	f, err := openExclusive(w.spillPath(), os.O_RDWR)
	if err != nil {
		w.spillFailed(err)
		return
	}
	// The ranges are written before the file is published, so ReadAt never reads one
	// not written yet.
	var werr error
	buf := make([]byte, 64<<10)
	for _, r := range ranges {
		r[1] = min(r[1], upTo)
		for o := r[0]; o < r[1] && werr == nil; {
			n, missed := 0, r[1]-o
			if w.backfill != nil {
				n, missed = w.backfill(buf[:min(int64(len(buf)), r[1]-o)], o)
			}
			if missed > 0 || n == 0 {
				if missed == 0 {
					missed = r[1] - o
				}
				w.noteGap(o, min(o+missed, r[1]))
				o += missed
				continue
			}
			n = int(min(int64(n), r[1]-o))
			_, werr = f.WriteAt(buf[:n], o)
			o += int64(n)
		}
	}
	w.smu.Lock()
	if w.released { // Release ran meanwhile: it found no file to delete
		w.smu.Unlock()
		f.Close()
		os.Remove(w.spillPath())
		return
	}
	w.spill = f
	w.smu.Unlock()
	if werr != nil {
		w.spillFailed(werr)
	}
}

// spillFailed records a spill's write error: the transcript stops (Err), and what the
// spill should hold reads as nothing.
func (w *Writer) spillFailed(err error) {
	w.fail(fmt.Errorf("spill: %w", err))
	w.smu.Lock()
	w.gaps = append(w.gaps, w.spilled...)
	w.smu.Unlock()
}

// noteGap records that the spill lacks the range [from, to) of its spilled ranges.
func (w *Writer) noteGap(from, to int64) {
	w.smu.Lock()
	if n := len(w.gaps); n > 0 && w.gaps[n-1][1] == from {
		w.gaps[n-1][1] = to
	} else {
		w.gaps = append(w.gaps, [2]int64{from, to})
	}
	w.smu.Unlock()
}
