package truncate

import (
	"bytes"
	"unicode/utf8"

	"github.com/ptyhub/ptyhub/termtext"
)

// A Stream turns a raw terminal stream into text within a token budget: it converts the
// raw bytes with a termtext.Converter one raw line at a time into a Collector
// (ConvertLines, so the raw range of a cut names exactly the lines cut) and counts the
// tokens of the raw bytes themselves (RawCounter), so the count reported does not depend
// on how reads split the stream, on the budget, or on flood mode.
//
// Flood mode: once the text overflows the Collector's head and tail (the result will be
// cut) and no caller needs the text of each write (NoFlood not called), the Stream stops
// converting every byte. It keeps the last bytes raw (keep: 4× a side of the budget, at
// least two reads, at most 8 MiB) and converts them in Result; what passes before them
// is accounted for raw (Collector.SkipRaw).
//
// The converter and the offset where its unfinished line began belong to the caller
// (they outlive one Stream: the agent's position in a session carries them from call to
// call); the Stream updates them. A Stream is not safe for concurrent use.
type Stream struct {
	coll     *Collector
	cnt      RawCounter
	conv     *termtext.Converter
	lineFrom *int64
	side     int
	noFlood  bool
	text     []byte // the text of the last Write (in flood mode none)

	// Flood mode: tail holds raw bytes [tailFrom, tailFrom+len(tail)), between keep and
	// 2×keep of them; skipped says bytes before it went to the middle raw.
	tail     []byte
	tailFrom int64
	skipped  bool
	keep     int
	read     int // the largest write a caller makes
}

// NewStream returns a Stream for budget tokens, for writes of at most read bytes, that
// converts with conv and keeps in *lineFrom the raw offset where conv's unfinished line
// began.
func NewStream(budget, read int, conv *termtext.Converter, lineFrom *int64) *Stream {
	st := &Stream{coll: NewCollector(budget), conv: conv, lineFrom: lineFrom, side: SideBytes(budget), read: read}
	st.coll.CountedElsewhere() // cnt counts the original tokens (SetOriginal in Result)
	st.keep = min(max(4*st.side, 2*read), 8<<20)
	return st
}

// NoFlood keeps the Stream converting every byte (a caller that matches the text of each
// write needs it). Call it before the first Write.
func (st *Stream) NoFlood() { st.noFlood = true }

// Flooding reports whether the Stream is in flood mode.
func (st *Stream) Flooding() bool { return st.tail != nil }

// Write adds the raw bytes at [at, at+len(raw)), which follow what was written before
// (but for a gap the caller noted with Gap). It returns the text they produced, valid
// until the next Write: none in flood mode.
func (st *Stream) Write(raw []byte, at int64) []byte {
	if len(raw) == 0 {
		return nil
	}
	st.cnt.Write(raw)
	if st.tail == nil && !st.noFlood && st.coll.Overflowing() {
		st.text = st.conv.Flush(st.text[:0])
		if rest := WriteReleased(st.conv, st.coll, st.text, at); len(rest) > 0 {
			st.coll.Write(rest, min(*st.lineFrom, at), at)
		}
		*st.conv = termtext.Converter{}
		st.tail, st.tailFrom = make([]byte, 0, 2*st.keep), at
	}
	if st.tail == nil {
		st.text = ConvertLines(st.conv, st.coll, st.text, raw, at, st.lineFrom)
		return st.text
	}
	st.tail = append(st.tail, raw...)
	if len(st.tail) > 2*st.keep-st.read {
		drop := len(st.tail) - st.keep
		st.coll.SkipRaw(st.tail[:drop], st.tailFrom, st.tailFrom+int64(drop))
		st.tailFrom += int64(drop)
		st.tail = st.tail[:copy(st.tail, st.tail[drop:])]
		st.skipped = true
	}
	return nil
}

// Gap notes that the stream goes on at offset at after bytes the caller could not read:
// the unfinished line begins there.
func (st *Stream) Gap(at int64) { *st.lineFrom = at }

// Result ends the stream at raw offset end: the raw bytes kept in flood mode are
// converted, and the converter's unfinished line is flushed into the text (closed, when
// final: the stream has ended for good). It returns what the agent sees of the text;
// when truncated, its token count is the raw counter's. The Stream must not be written
// to afterwards.
func (st *Stream) Result(end int64, final bool) Result {
	if st.tail != nil {
		if st.skipped {
			// The kept part starts mid-stream: convert from a line start, so no escape
			// sequence or character is cut in two (the cut lands on a line anyway).
			cut := tailStart(st.tail, 2*st.side)
			st.coll.SkipRaw(st.tail[:cut], st.tailFrom, st.tailFrom+int64(cut))
			st.tailFrom += int64(cut)
			st.tail = st.tail[cut:]
		}
		*st.lineFrom = st.tailFrom
		for len(st.tail) > 0 {
			k := min(len(st.tail), 4<<10)
			st.text = ConvertLines(st.conv, st.coll, st.text, st.tail[:k], st.tailFrom, st.lineFrom)
			st.tailFrom += int64(k)
			st.tail = st.tail[k:]
		}
	}
	from := *st.lineFrom
	if final {
		st.text = st.conv.Close(st.text[:0])
	} else {
		st.text = st.conv.Flush(st.text[:0])
	}
	if rest := WriteReleased(st.conv, st.coll, st.text, end); len(rest) > 0 {
		st.coll.Write(rest, from, end)
	}
	*st.lineFrom = end
	r := st.coll.Result()
	if r.Truncated {
		// The count of the bytes themselves: not of how reads split them, nor of the
		// budget, nor of whether this stream went into flood mode.
		r.SetOriginal(max(st.cnt.Tokens(), 1))
	}
	return r
}

// ConvertLines turns the raw bytes at [start, start+len(raw)) into text with conv and
// writes it to coll one raw line at a time, each tagged with the raw bytes it came from:
// from *lineFrom (where the unfinished line began: the text of a line finished later is
// tagged with every byte it came from) to the end of the line, and a blank line that the
// converter held back with its own line. So the raw range of a cut names exactly the
// lines whose text was cut. It returns the text (in dst's storage).
func ConvertLines(conv *termtext.Converter, coll *Collector, dst, raw []byte, start int64, lineFrom *int64) []byte {
	dst = dst[:0]
	for len(raw) > 0 {
		n := len(raw)
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			n = i + 1
		}
		end := start + int64(n)
		k := len(dst)
		dst = conv.Write(dst, raw[:n])
		if text := WriteReleased(conv, coll, dst[k:], end); len(text) > 0 {
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

// WriteReleased writes to coll the blank lines that conv held back and released at the
// start of text, its latest text for the raw bytes up to end, each tagged with the raw
// line it came from, and returns the rest of text.
func WriteReleased(conv *termtext.Converter, coll *Collector, text []byte, end int64) []byte {
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
