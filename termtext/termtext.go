// Package termtext turns raw pseudo-terminal output into the text view that
// agents read: what a human would see line by line, as plain UTF-8.
//
// A [Converter] is a streaming converter. Its state (an escape sequence, a
// UTF-8 character, the current line) carries across calls, so splitting the
// input at any byte gives the same text. Memory is bounded: nothing grows with
// the input except the caller's output slice.
//
// # What the text view shows
//
//   - Escape sequences are removed: CSI (ESC [ … final byte, including private
//     modes such as bracketed paste ESC[?2004h and colon SGR), OSC (ESC ] … BEL
//     or ESC \), DCS, SOS, PM and APC strings (… ESC \), and the other ESC
//     sequences (ESC 7, ESC =, charset designations such as ESC ( B). Strings
//     are skipped, never buffered: an OSC that is never terminated costs no
//     memory, and output after its terminator appears. CAN and SUB cancel a
//     sequence; ESC inside a sequence starts a new one.
//   - 8-bit C1 controls (0x80–0x9F) are not recognised as bytes: in UTF-8
//     output they are continuation bytes. C1 characters that arrive properly
//     UTF-8 encoded (U+0080–U+009F) are dropped, as a terminal shows nothing.
//   - The current line is a row of cells, one per rune (widths are ignored).
//     "\r\n" ends the line; a bare "\r" moves to column 0 and later characters
//     overwrite ("10%\r20%\r30%\n" → "30%\n", "abcdef\rXY\n" → "XYcdef\n").
//     Backspace moves left one column, never below 0 ("abc\b\bX\n" → "aXc\n").
//     "\n", VT and FF end the line; so do ESC D (IND) and ESC E (NEL).
//   - Line-editing CSIs are applied to the line: K (erase in line: 0 to the
//     end, 1 to the start, 2 all), G and ` (column), C and a (forward), D
//     (back), X (erase characters), P (delete characters), @ (insert blanks),
//     E and F (column 0). ESC 7 / ESC 8 and CSI s / CSI u save and restore the
//     column. Otherwise vertical cursor motion, cursor addressing and screen
//     clears do not move text between lines (use the screen view for full-screen
//     programs), with two exceptions for what a human sees as nothing: blank
//     lines (empty or only spaces) are held back, and cursor motion up (CUU,
//     CPL, RI) goes back over them, or cursor addressing or a whole-screen clear
//     (CSI 2J, 3J) moves away from them, drops them: a prompt that reserves rows
//     for a menu and moves back up adds no blank lines. One row further up is the
//     last line's row: a redraw of it as it was is not repeated (a prompt drawn
//     again), a changed one is shown as a new line. Blank lines the program
//     printed and nothing moved back over are kept: they come out before the
//     next line that shows something, or at Close, and [Converter.Released]
//     names the raw bytes each came from, so a caller can map the text back to
//     raw offsets line by line.
//   - Cursor addressing (CSI H, f) that names the position the last one named,
//     with nothing but text and motion along the row since, moves the cursor back
//     to where that text began, so what follows overwrites it: vim writes its
//     ambiguous-width probe ▽ at an address, asks for the cursor's position and
//     blanks it at the same address at once.
//   - Trailing spaces: a line keeps the spaces the program printed ("a  \r\n"
//     stays "a  ", a prompt ">>> " keeps its space), but what erasing leaves
//     behind is trimmed: cells blanked by K, X, 1K or never written (skipped
//     by a cursor move), and spaces at or right of the cursor, which is what
//     echo-erase "\b \b" leaves ("ab\b \b" reads "a", as on a terminal). The
//     "\r" of "\r\n" does not count as moving the cursor. A line written over
//     from its start (a bare "\r" or CSI G to column 1 while it had text: a
//     progress line redrawn) loses all its trailing spaces: they are padding that
//     erases the old frame ("collecting ...\rcollected 3 items      \r\n" reads
//     "collected 3 items").
//   - Character sets: text in the DEC special graphics set (ESC ( 0, or ESC ) 0
//     and SO) shows as the glyphs a terminal draws: "lqqk" reads "┌──┐".
//   - Concealed text (SGR 8, which a terminal shows as blank) is not shown: a
//     concealed run becomes the marker [HiddenText] once ("vis \e[8mSECRET\e[0m
//     end" → "vis [hidden text] end"), so text a human cannot see never
//     reaches the agent as if it were visible. SGR 0, 28 and an empty SGR end
//     the run; colour arguments (38;5;8, 38:2:…) are not mistaken for 8.
//   - Tab is kept as "\t" (one cell). NUL is shown as U+2400 (␀) so that
//     "a\0b" does not silently read "ab" (find -print0, binary output). DEL and
//     the other C0 controls (BEL, …) are dropped.
//   - UTF-8: a character split across writes is carried to the next write.
//     Invalid input becomes U+FFFD, one per maximal subpart of an ill-formed
//     sequence (the Unicode and WHATWG practice: "\xe2\x82X" → "\uFFFDX",
//     "\xff\xfe" → two U+FFFD). The output is always valid UTF-8 and contains
//     no control characters other than "\n" and "\t".
//   - A line longer than 4096 runes is emitted as it stands when it fills,
//     without a newline, and a new segment starts; the text is unchanged
//     unless the program later moves the cursor back into the emitted part.
//     A CSI with more than 256 parameter bytes is abandoned and the rest is
//     shown as text. At [Converter.Close] an unterminated sequence is dropped.
//
// # Cost
//
// Plain text and escape sequences cost O(1) per byte, with no allocation
// beyond the growth of the caller's slice. A line-editing sequence touches at
// most one line of cells (4096), so crafted input can slow conversion to
// tens of MB/s but never grows memory.
//
// # Flushing an unfinished line
//
// [Converter.Flush] emits the unfinished line (a prompt) and remembers what it
// emitted. Later output that extends that line appends only the new part. If
// the program instead rewrites the already emitted part (a progress bar, a
// "\r" overwrite), the next emission starts a new line and shows the whole
// line as it now stands, so the agent always sees the final state and never a
// splice of old and new text.
package termtext

import (
	"encoding/binary"
	"unicode/utf8"
)

// maxLine is the longest line, in runes, kept in memory. A longer line is
// emitted in pieces of maxLine runes (without inserting newlines). It also
// bounds the work of one line-editing sequence.
const maxLine = 1 << 12

const (
	maxBlanks   = 1000     // blank lines held back for cursor motion to cancel (rows of a big terminal)
	maxLast     = 512      // longest last line remembered for a redraw of its row
	maxCSI      = 256      // parameter and intermediate bytes before a CSI is abandoned
	maxEscInter = 16       // intermediate bytes before an ESC sequence is abandoned
	maxParam    = 1 << 20  // numeric parameters saturate here
	nulRune     = '\u2400' // shown for NUL
	blank       = 0        // an erased or never written cell; shown as a space
)

// HiddenText is shown in place of a run of concealed text (SGR 8).
const HiddenText = "[hidden text]"

type parseState uint8

const (
	sGround parseState = iota
	sEsc               // after ESC
	sCSI               // after ESC [
	sStr               // inside OSC, DCS, SOS, PM or APC
	sStrEsc            // ESC inside a string: ESC \ ends it
)

// Converter converts a stream of raw terminal output to text. The zero value
// is ready to use. A Converter is not safe for concurrent use.
type Converter struct {
	line []rune // cells of the current line (blank: erased, never written)
	// tail is printable ASCII that follows line, kept as bytes until something other
	// than more of it arrives (materialize): a long plain line (a flood) is copied, not
	// put in cells and read back. While it is not empty the cursor is at its end and no
	// "\r", concealment or emitted part (shown) is pending.
	tail  []byte
	shown []rune // the part of the current line already emitted by Flush
	cur   int    // cursor column; may be past len(line) (blanks are added lazily)
	saved int    // column saved by ESC 7 / CSI s
	// addr is the position (row, column) the last cursor address named, and addrCur the
	// column it left in the line, while addrOK: nothing but text and motion along the
	// row came after it.
	addr    [2]int
	addrCur int
	addrOK  bool
	cr      bool // a "\r" not yet applied: "\r\n" is a plain newline
	// redrawn: the line was written over from its start (a bare "\r", CSI G) while it
	// had content: its trailing spaces are padding that erases the old text.
	redrawn bool

	// Blank lines and the row above: held are the blank lines not yet emitted (at most
	// maxBlanks), each as the raw bytes it came from, which cursor motion up or to an
	// absolute row cancels; last is the last line emitted (when lastOK: short enough and
	// emitted through the cells), and onLast says the cursor went back up onto its row,
	// which then holds last.
	held   [][2]int64
	last   []byte // UTF-8
	lastOK bool
	onLast bool

	// Raw offsets in the stream written since the Converter was new or closed: pos is
	// where the current Write began (then where it ended), at is just past the byte being
	// handled, lineAt just past the last byte that ended a line; old counts the first
	// held lines that were held when the current Write, Flush or Close began, and rel
	// those of them it emitted (see Released).
	pos, at, lineAt int64
	old             int
	rel             [][2]int64

	st    parseState
	osc   bool  // the string being skipped is an OSC (BEL ends it)
	n     int   // parameter/intermediate bytes of the current sequence
	param int   // first numeric parameter of a CSI
	flags uint8 // CSI/ESC flags below

	need   uint8 // UTF-8 continuation bytes still expected
	lo, hi byte  // bounds of the next continuation byte
	acc    rune  // UTF-8 character decoded so far

	// Character sets: G0 and G1 designated as DEC special graphics (ESC ( 0, ESC ) 0),
	// G1 shifted in (SO); gfx caches whether the set in use is the graphics one.
	g0, g1, so, gfx bool
	inter           byte // first intermediate byte of the current ESC sequence

	// cellsOnly turns the fast paths off (lineRun, appendRun, a whole character decoded
	// at once): every byte goes through the cells, one at a time. Tests set it to check
	// that the fast paths give the same text.
	cellsOnly bool

	// SGR tracking for concealed text.
	conceal bool  // SGR 8 is on
	hid     bool  // the marker of the current concealed run was shown
	sv      int   // value of the CSI parameter being read
	sgr     int8  // conceal change of the current CSI if it is an SGR: +1 on, -1 off
	grp     bool  // inside a colon sub-parameter group
	ext     uint8 // 38/48/58 colour: 1 = mode expected, else arguments left + 1
}

const (
	fPrivate uint8 = 1 << iota // CSI starts with < = > ?
	fInter                     // intermediate byte seen
	fNextArg                   // past the first parameter
	fBad                       // malformed: ignore the sequence
)

// Write converts raw and appends the finished lines (each ending in "\n") to
// dst, returning the extended slice. The unfinished line is kept for later
// calls; see [Converter.Flush] and [Converter.Pending].
func (c *Converter) Write(dst, raw []byte) []byte {
	c.rel, c.old = c.rel[:0], len(c.held)
	for i := 0; i < len(raw); i++ {
		b := raw[i]
		switch c.st {
		case sGround:
			if c.need > 0 {
				if b >= c.lo && b <= c.hi {
					c.acc = c.acc<<6 | rune(b&0x3f)
					c.lo, c.hi = 0x80, 0xbf
					c.need--
					if c.need == 0 {
						dst = c.putDecoded(dst, c.acc)
					}
					continue
				}
				// Ill-formed: one U+FFFD for the maximal subpart, then
				// handle b afresh.
				c.need = 0
				dst = c.put(dst, utf8.RuneError)
			}
			if b >= 0x20 && b < 0x7f {
				fast := !c.cellsOnly
				if fast && len(c.line) == 0 && len(c.shown) == 0 && c.cur == 0 && !c.cr && !c.conceal && !c.gfx && !c.redrawn && !c.onLast {
					var done bool
					if dst, i, done = c.lineRun(dst, raw, i); done {
						continue
					}
				}
				if fast && (len(c.tail) > 0 || !c.cr && !c.conceal && !c.gfx && c.cur == len(c.line) && c.cur < maxLine) {
					dst, i = c.appendRun(dst, raw, i)
					continue
				}
				r := rune(b)
				if c.gfx && b >= 0x60 {
					r = decGraphics[b-0x60]
				}
				dst = c.put(dst, r)
				continue
			}
			// Not printable ASCII: the line goes back to cells. (The tail is empty in
			// every other state: only these bytes leave the ground state or start a
			// character.)
			if len(c.tail) > 0 {
				c.materialize()
			}
			if b >= 0x80 {
				// Fast path: a whole valid character in this chunk.
				if r, size := utf8.DecodeRune(raw[i:]); size > 1 && !c.cellsOnly {
					dst = c.putDecoded(dst, r)
					i += size - 1
					continue
				}
				dst = c.startRune(dst, b)
				continue
			}
			c.at = c.pos + int64(i) + 1
			dst = c.control(dst, b)

		case sEsc:
			if b >= 0x30 && b < 0x7f { // final byte (the common case, inline)
				c.at = c.pos + int64(i) + 1
				dst = c.escFinal(dst, b)
				continue
			}
			dst, i = c.escByte(dst, b, i)

		case sCSI:
			// The common bytes inline: the final byte, and digits and separators of
			// a sequence with room left and no intermediate byte. csiByte handles
			// every byte (these too) as the general case.
			if b >= 0x40 && b < 0x7f {
				c.st = sGround
				dst = c.csiFinal(dst, b)
				continue
			}
			if b >= 0x30 && b <= ';' && c.n < maxCSI && c.flags&fInter == 0 {
				c.n++
				if b <= '9' {
					if c.flags&fNextArg == 0 {
						c.param = min(c.param*10+int(b-'0'), maxParam)
					}
					c.sv = min(c.sv*10+int(b-'0'), maxParam)
				} else { // ':' or ';'
					c.flags |= fNextArg
					c.sgrParam(b == ':')
				}
				continue
			}
			dst, i = c.csiByte(dst, b, i)

		case sStr:
			switch b {
			case 0x07:
				if c.osc {
					c.st = sGround
				}
			case 0x1b:
				c.st = sStrEsc
			case 0x18, 0x1a:
				c.st = sGround
			}

		case sStrEsc:
			if b == '\\' {
				c.st = sGround
				continue
			}
			// The string ended without ST; this ESC starts a new sequence.
			c.enterEsc()
			i--
		}
	}
	c.pos += int64(len(raw))
	c.endCall()
	return dst
}

// lineRun is Write's fastest path, for printable ASCII at raw[i] at the start of a
// line with nothing pending (no cells, nothing shown or held by a "\r", concealment,
// graphics set, redraw or the last line's row): a run that ends the line in this
// chunk ("\n" or "\r\n") is the line's text as it is; one longer than a line is
// emitted a line's length at a time. Both give what the cells would. It returns the
// index of the last byte it consumed and true, or false, having changed nothing, when
// the run does neither.
func (c *Converter) lineRun(dst, raw []byte, i int) ([]byte, int, bool) {
	j := printableRun(raw, i+1, min(len(raw), i+maxLine+1))
	if j-i > maxLine {
		dst = c.emitBlanks(dst)
		c.lastOK = false
		dst = append(dst, raw[i:i+maxLine]...)
		return dst, i + maxLine - 1, true
	}
	end := j
	if end < len(raw) && raw[end] == '\r' {
		end++
	}
	if end < len(raw) && raw[end] == '\n' && (raw[i] != ' ' || !onlySpaces(raw[i:j])) {
		dst = c.emitBlanks(dst)
		if c.lastOK = j-i <= maxLast; c.lastOK {
			c.last = append(c.last[:0], raw[i:j]...)
		}
		dst = append(dst, raw[i:j]...)
		dst = append(dst, '\n')
		c.hid = false
		c.lineAt = c.pos + int64(end) + 1
		c.addrOK = false
		return dst, end, true
	}
	return dst, i, false
}

// appendRun is Write's fast path for a run of printable ASCII starting at raw[i]
// appended at the end of the line (the cursor there, no "\r", concealment or
// graphics set pending, or a tail already started). It returns the index of the
// last byte it consumed; i-1 when it only emitted a tail that filled the line, so
// that raw[i] is handled again at a segment's start.
func (c *Converter) appendRun(dst, raw []byte, i int) ([]byte, int) {
	if c.cur >= maxLine { // the tail filled the line: emit it as it stands (as putCell does)
		dst = c.emitBlanks(dst)
		c.lastOK, c.addrOK = false, false
		dst = append(appendRunes(dst, c.line), c.tail...)
		c.line, c.tail, c.cur = c.line[:0], c.tail[:0], 0
		return dst, i - 1 // this byte again, now at a segment's start (the fastest path)
	}
	j := printableRun(raw, i+1, min(len(raw), i+maxLine-c.cur))
	if len(c.tail) > 0 || j == len(raw) && len(c.shown) == 0 {
		// A run that reaches the end of this chunk on a line nothing of
		// which was emitted (a long line, a flood), or follows one, goes
		// to the tail as bytes.
		c.tail = append(c.tail, raw[i:j]...)
	} else {
		base := len(c.line)
		c.line = grow(c.line, j-i)
		l := c.line[base : base+j-i]
		for k, ch := range raw[i:j] {
			l[k] = rune(ch)
		}
	}
	c.cur += j - i
	return dst, j - 1
}

// escByte handles byte b, at index i of the current Write, after an ESC (state
// sEsc). It returns the index of the last byte consumed: i-1 when the sequence is
// abandoned and b is to be handled again as text.
func (c *Converter) escByte(dst []byte, b byte, i int) ([]byte, int) {
	switch {
	case b >= 0x20 && b < 0x30: // intermediate
		if c.flags&fInter == 0 {
			c.inter = b
		}
		c.flags |= fInter
		c.n++
		if c.n > maxEscInter {
			c.st = sGround
			return dst, i - 1
		}
	case b >= 0x30 && b < 0x7f:
		c.at = c.pos + int64(i) + 1
		dst = c.escFinal(dst, b)
	default:
		return c.seqByte(dst, b, i)
	}
	return dst, i
}

// csiByte handles byte b, at index i of the current Write, inside a CSI (state
// sCSI). It returns the index of the last byte consumed: i-1 when the sequence is
// abandoned and b is to be handled again as text.
func (c *Converter) csiByte(dst []byte, b byte, i int) ([]byte, int) {
	switch {
	case b >= 0x40 && b < 0x7f:
		c.st = sGround
		dst = c.csiFinal(dst, b)
	case b >= 0x30 && b < 0x40: // parameter
		c.n++
		if c.n > maxCSI {
			c.st = sGround
			return dst, i - 1
		}
		if c.flags&fInter != 0 {
			c.flags |= fBad
		}
		switch {
		case b <= '9':
			if c.flags&fNextArg == 0 {
				c.param = min(c.param*10+int(b-'0'), maxParam)
			}
			c.sv = min(c.sv*10+int(b-'0'), maxParam)
		case b <= ';': // ':' or ';'
			c.flags |= fNextArg
			c.sgrParam(b == ':')
		default: // < = > ?
			if c.n == 1 {
				c.flags |= fPrivate
			} else {
				c.flags |= fBad
			}
		}
	case b >= 0x20 && b < 0x30: // intermediate
		c.n++
		if c.n > maxCSI {
			c.st = sGround
			return dst, i - 1
		}
		c.flags |= fInter
	default:
		return c.seqByte(dst, b, i)
	}
	return dst, i
}

// seqByte handles byte b, at index i of the current Write, inside an ESC or CSI
// sequence when b is none of the sequence's own bytes: ESC starts a new sequence,
// CAN and SUB cancel it, another C0 control acts as it does outside one (NUL is
// dropped), DEL is ignored, and a byte that is not ASCII abandons the sequence:
// then it returns i-1, so that b is handled again as text; else i.
func (c *Converter) seqByte(dst []byte, b byte, i int) ([]byte, int) {
	switch {
	case b == 0x1b:
		c.enterEsc()
	case b == 0x18 || b == 0x1a:
		c.st = sGround
	case b < 0x20:
		if b != 0 {
			c.at = c.pos + int64(i) + 1
			dst = c.control(dst, b)
		}
	case b == 0x7f:
	default: // not ASCII: abandon the sequence, show the text
		c.st = sGround
		return dst, i - 1
	}
	return dst, i
}

// Flush appends the unfinished line as it stands now (for example a prompt
// that has no newline yet) and remembers it as emitted, so that later output
// continuing the line is not repeated. An incomplete UTF-8 character or
// escape sequence at the end is not emitted; it is kept for the next Write.
// Blank lines held back go out before a line that shows something (or at
// Close); a line that shows nothing is not emitted.
func (c *Converter) Flush(dst []byte) []byte {
	c.rel, c.old = c.rel[:0], len(c.held)
	dst = c.flush(dst)
	c.endCall()
	return dst
}

func (c *Converter) flush(dst []byte) []byte {
	c.materialize()
	s := c.content()
	if len(c.shown) == 0 {
		if c.nothingNew(s) {
			return dst
		}
		dst = c.emitBlanks(dst)
		c.onLast = false
	}
	if len(c.shown) > 0 && hasPrefix(s, c.shown) {
		dst = appendRunes(dst, s[len(c.shown):])
		c.shown = append(c.shown, s[len(c.shown):]...)
		return dst
	}
	if len(c.shown) > 0 {
		dst = append(dst, '\n')
	}
	dst = appendRunes(dst, s)
	c.shown = append(c.shown[:0], s...)
	return dst
}

// Pending returns what [Converter.Flush] would append now, without changing
// any state. It is meant for matching patterns against an unfinished line.
func (c *Converter) Pending() []byte {
	c.materialize() // the same line, in cells
	var dst []byte
	if len(c.shown) == 0 {
		if c.nothingNew(c.content()) {
			return nil
		}
		for range c.held {
			dst = append(dst, '\n')
		}
	}
	return c.appendPending(dst)
}

// Close ends the stream: like [Converter.Flush], except that an incomplete
// UTF-8 character at the end becomes U+FFFD. An unterminated escape sequence
// is dropped. Afterwards the Converter is reset and can convert a new stream.
func (c *Converter) Close(dst []byte) []byte {
	c.rel, c.old = c.rel[:0], len(c.held)
	c.materialize()
	if c.st == sGround && c.need > 0 {
		c.need = 0
		dst = c.put(dst, utf8.RuneError)
	}
	dst = c.emitBlanks(c.flush(dst))
	c.endCall()
	*c = Converter{line: c.line[:0], shown: c.shown[:0], tail: c.tail[:0], last: c.last[:0], held: c.held[:0], rel: c.rel}
	return dst
}

// Released returns the blank lines held back before the last call of Write, Flush or
// Close that it emitted: that call's text starts with one "\n" for each, in order, and
// the rest of its text came from the bytes it was given. Each is the raw line it came
// from, [from, to), counted back from the end of the input written so far (bytes
// to..from before it: a line that the last byte written ended is [n, 0)). A caller that
// maps text to raw offsets tags these "\n"s with their own lines. The slice is valid
// until the next call.
func (c *Converter) Released() [][2]int64 { return c.rel }

// endCall turns the lines in rel into distances back from pos.
func (c *Converter) endCall() {
	for k, r := range c.rel {
		c.rel[k] = [2]int64{c.pos - r[0], c.pos - r[1]}
	}
}

// String converts a whole raw output to text.
func String(raw []byte) string {
	var c Converter
	return string(c.Close(c.Write(nil, raw)))
}

// printableRun returns the end of the run of printable ASCII (0x20–0x7e) in
// raw[from:lim] (lim ≤ len(raw)), 32 then eight bytes at a time while it can.
//
// A word's test is one mask of high bits: a byte below 0x20 borrows in w - 0x20 (per
// byte), one from 0x7f to 0xfe gets its high bit in w + 1, and 0xff (0 in w + 1) has it
// in w - 0x20. A borrow or carry into the byte above comes only from a flagged byte, and
// a flagged word is looked at again a byte at a time.
func printableRun(raw []byte, from, lim int) int {
	raw = raw[:lim]
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for from+32 <= len(raw) { // four words, one test (a long run: a flood)
		b := raw[from : from+32]
		w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		w2, w3 := binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
		if ((w0-ones*0x20)|(w0+ones)|(w1-ones*0x20)|(w1+ones)|(w2-ones*0x20)|(w2+ones)|(w3-ones*0x20)|(w3+ones))&highs != 0 {
			break
		}
		from += 32
	}
	for from+8 <= len(raw) {
		w := binary.LittleEndian.Uint64(raw[from:])
		if ((w-ones*0x20)|(w+ones))&highs != 0 {
			break
		}
		from += 8
	}
	for from < len(raw) && raw[from] >= 0x20 && raw[from] < 0x7f {
		from++
	}
	return from
}

// materialize moves the tail into the line's cells.
func (c *Converter) materialize() {
	if len(c.tail) == 0 {
		return
	}
	base := len(c.line)
	c.line = grow(c.line, len(c.tail))
	for k, ch := range c.tail {
		c.line[base+k] = rune(ch)
	}
	c.tail = c.tail[:0]
}

// content is the current line without the blanks trailing at or after the
// cursor.
func (c *Converter) content() []rune {
	end := len(c.line)
	for end > 0 && (c.line[end-1] == blank || (c.line[end-1] == ' ' && (end > c.cur || c.redrawn))) {
		end--
	}
	return c.line[:end]
}

func (c *Converter) appendPending(dst []byte) []byte {
	s := c.content()
	if len(c.shown) > 0 {
		if hasPrefix(s, c.shown) {
			s = s[len(c.shown):]
		} else {
			dst = append(dst, '\n')
		}
	}
	return appendRunes(dst, s)
}

// newline ends the current line. A blank line is held back (see up); a redraw of the
// row of the last line that left it as it was is not emitted again.
func (c *Converter) newline(dst []byte) []byte {
	if len(c.shown) == 0 && c.nothingNew(c.content()) {
		if !c.onLast {
			if len(c.held) == maxBlanks {
				dst = c.emitBlanks(dst)
			}
			c.held = append(c.held, [2]int64{c.lineAt, c.at})
		}
	} else {
		dst = c.emitBlanks(dst)
		s := c.content()
		if c.lastOK = len(s) <= maxLast; c.lastOK {
			c.last = appendRunes(c.last[:0], s)
		}
		dst = c.appendPending(dst)
		dst = append(dst, '\n')
	}
	c.onLast = false
	c.addrOK = false
	c.lineAt = c.at
	c.line = c.line[:0]
	c.shown = c.shown[:0]
	c.cur = 0
	c.cr = false
	c.hid = false
	c.redrawn = false
	return dst
}

// nothingNew reports whether s, the current line's content with nothing of it
// emitted, adds nothing to the text: it shows no character (only spaces), or it is
// the row of the last line, redrawn as it was.
func (c *Converter) nothingNew(s []rune) bool {
	if c.onLast && sameText(s, c.last) {
		return true
	}
	for _, r := range s {
		if r != ' ' && r != blank {
			return false
		}
	}
	return true
}

// emitBlanks appends the blank lines held back and notes them in rel.
func (c *Converter) emitBlanks(dst []byte) []byte {
	for range c.held {
		dst = append(dst, '\n')
	}
	c.rel = append(c.rel, c.held[:c.old]...)
	c.held, c.old = c.held[:0], 0
	return dst
}

// up moves the cursor n rows up (CUU, CPL, RI) from a line that shows nothing yet:
// the blank lines it goes back over were cursor motion, not output (a prompt that
// reserves rows for a menu, then moves back up), and are dropped. One row more is the
// last line's row: later text there is a redraw of it. From a line with text, or further
// up, vertical motion is ignored.
func (c *Converter) up(n int) {
	if len(c.shown) > 0 || !c.nothingNew(c.content()) || c.onLast {
		return
	}
	if n <= len(c.held) {
		c.held = c.held[:len(c.held)-n]
		c.old = min(c.old, len(c.held))
		return
	}
	n -= len(c.held)
	c.held, c.old = c.held[:0], 0
	if n == 1 && c.lastOK {
		c.line = c.line[:0]
		for _, r := range string(c.last) {
			c.line = append(c.line, r)
		}
		c.onLast = true
	}
}

// jump handles cursor addressing and screen clears from a line that shows nothing
// yet: the blank lines held back are layout, not output.
func (c *Converter) jump() {
	if len(c.shown) == 0 && !c.onLast && c.nothingNew(c.content()) {
		c.held, c.old = c.held[:0], 0
	}
}

// sameText reports whether the cells s read as the text t.
func sameText(s []rune, t []byte) bool {
	i := 0
	for _, r := range string(t) {
		if i >= len(s) || s[i] != r && !(isSpace(s[i]) && isSpace(r)) {
			return false
		}
		i++
	}
	return i == len(s)
}

// onlySpaces reports whether b holds only spaces.
func onlySpaces(b []byte) bool {
	for _, ch := range b {
		if ch != ' ' {
			return false
		}
	}
	return true
}

func (c *Converter) applyCR() {
	if c.cr {
		c.cr = false
		c.cur = 0
		c.redrawn = c.redrawn || len(c.line) > 0
	}
}

// sgrParam takes the CSI parameter just read (c.sv), ended by ':' when colon,
// and records in c.sgr whether the sequence, if it turns out to be an SGR,
// turns concealment on or off. Sub-parameters after ':' and the arguments of
// an extended colour (38;5;n, 38;2;r;g;b) are skipped.
func (c *Converter) sgrParam(colon bool) {
	v := c.sv
	c.sv = 0
	switch {
	case c.grp: // a sub-parameter; ';' ends the group
		c.grp = colon
		return
	case c.ext == 1: // colour mode: 5 takes one argument, 2 takes three
		switch v {
		case 5:
			c.ext = 2
		case 2:
			c.ext = 4
		default:
			c.ext = 0
		}
		c.grp = colon
		return
	case c.ext > 1:
		c.ext--
		if c.ext == 1 {
			c.ext = 0
		}
		c.grp = colon
		return
	}
	c.grp = colon
	switch v {
	case 0, 28:
		c.sgr = -1
	case 8:
		c.sgr = 1
	case 38, 48, 58:
		if !colon {
			c.ext = 1
		}
	}
}

// put writes r at the cursor and advances it; concealed text shows as one
// HiddenText marker per run.
func (c *Converter) put(dst []byte, r rune) []byte {
	if c.conceal {
		if c.hid {
			return dst
		}
		c.hid = true
		for _, m := range HiddenText {
			dst = c.putCell(dst, m)
		}
		return dst
	}
	return c.putCell(dst, r)
}

// putCell writes r at the cursor and advances it.
func (c *Converter) putCell(dst []byte, r rune) []byte {
	c.applyCR()
	if c.cur >= maxLine {
		// The line is full: emit it as it stands and start a new segment.
		dst = c.emitBlanks(dst)
		c.lastOK, c.onLast, c.addrOK = false, false, false
		dst = c.appendPending(dst)
		c.line = c.line[:0]
		c.shown = c.shown[:0]
		c.cur = 0
	}
	if c.cur < len(c.line) {
		c.line[c.cur] = r
	} else {
		old := len(c.line)
		c.line = grow(c.line, c.cur+1-old)
		clear(c.line[old:c.cur]) // blank cells up to the cursor
		c.line[c.cur] = r
	}
	c.cur++
	return dst
}

// putDecoded writes a decoded non-ASCII character; C1 controls are dropped.
func (c *Converter) putDecoded(dst []byte, r rune) []byte {
	if r < 0xa0 {
		return dst
	}
	return c.put(dst, r)
}

// startRune begins decoding the UTF-8 sequence whose first byte is b.
func (c *Converter) startRune(dst []byte, b byte) []byte {
	c.lo, c.hi = 0x80, 0xbf
	switch {
	case b >= 0xc2 && b <= 0xdf:
		c.need, c.acc = 1, rune(b&0x1f)
	case b >= 0xe0 && b <= 0xef:
		c.need, c.acc = 2, rune(b&0x0f)
		if b == 0xe0 {
			c.lo = 0xa0 // no overlong forms
		} else if b == 0xed {
			c.hi = 0x9f // no surrogates
		}
	case b >= 0xf0 && b <= 0xf4:
		c.need, c.acc = 3, rune(b&0x07)
		if b == 0xf0 {
			c.lo = 0x90 // no overlong forms
		} else if b == 0xf4 {
			c.hi = 0x8f // not above U+10FFFF
		}
	default: // a continuation byte, C0/C1, or F5–FF: never valid here
		dst = c.put(dst, utf8.RuneError)
	}
	return dst
}

// control executes a C0 control character (other than ESC handling inside
// sequences, which the caller does).
func (c *Converter) control(dst []byte, b byte) []byte {
	switch b {
	case '\n', 0x0b, 0x0c:
		return c.newline(dst)
	case '\r':
		c.cr = true
	case '\b':
		c.applyCR()
		if c.cur > 0 {
			c.cur--
		}
	case '\t':
		return c.put(dst, '\t')
	case 0:
		return c.put(dst, nulRune)
	case 0x0e: // SO: G1 in use
		c.so = true
		c.setGfx()
	case 0x0f: // SI: G0 in use
		c.so = false
		c.setGfx()
	case 0x1b:
		c.enterEsc()
	case 0x18, 0x1a:
		c.st = sGround
	}
	return dst
}

func (c *Converter) setGfx() { c.gfx = c.g0 && !c.so || c.g1 && c.so }

// decGraphics is what a terminal shows for 0x60–0x7E in the DEC special graphics
// set: line drawing (ncurses' ACS box lines, pstree, dialog) and a few symbols.
var decGraphics = [...]rune{
	'◆', '▒', '␉', '␌', '␍', '␊', '°', '±', '␤', '␋', '┘', '┐', '┌', '└', '┼', '⎺',
	'⎻', '─', '⎼', '⎽', '├', '┤', '┴', '┬', '│', '≤', '≥', 'π', '≠', '£', '·',
}

func (c *Converter) enterEsc() {
	c.st = sEsc
	c.n = 0
	c.flags = 0
}

// escFinal handles the final byte of an ESC sequence (0x30–0x7E).
func (c *Converter) escFinal(dst []byte, b byte) []byte {
	c.st = sGround
	if c.flags&fInter != 0 {
		// Charset designations: ESC ( F for G0, ESC ) F for G1; F = 0 is DEC
		// special graphics, anything else a text set. Others are ignored.
		switch c.inter {
		case '(':
			c.g0 = b == '0'
		case ')':
			c.g1 = b == '0'
		}
		c.setGfx()
		return dst
	}
	switch b {
	case '[':
		c.st = sCSI
		c.n, c.param, c.flags = 0, 0, 0
		c.sv, c.sgr, c.grp, c.ext = 0, 0, false, 0
	case ']':
		c.st, c.osc = sStr, true
	case 'P', 'X', '^', '_':
		c.st, c.osc = sStr, false
	case 'D', 'E': // IND, NEL
		return c.newline(dst)
	case 'M': // RI: up one row
		c.up(1)
		c.addrOK = false
	case '7':
		c.saved = c.cursor()
	case '8':
		c.cr = false
		c.cur = min(c.saved, maxLine)
		c.addrOK = false
	}
	return dst
}

// cursor is the column, with a pending "\r" applied.
func (c *Converter) cursor() int {
	if c.cr {
		return 0
	}
	return c.cur
}

// csiFinal executes a CSI sequence that ended with b.
func (c *Converter) csiFinal(dst []byte, b byte) []byte {
	f := c.flags
	if f&(fInter|fBad) != 0 || (f&fPrivate != 0 && b != 'K') {
		return dst
	}
	n := c.param
	switch b {
	case 'm':
		c.sgrParam(false)
		if on := c.sgr > 0; c.sgr != 0 && on != c.conceal {
			c.conceal, c.hid = on, false
		}
	case 'K': // erase in line
		c.applyCR()
		switch n {
		case 0:
			if c.cur < len(c.line) {
				c.line = c.line[:c.cur]
			}
		case 1:
			if c.cur+1 >= len(c.line) {
				c.line = c.line[:0]
			} else {
				clear(c.line[:c.cur+1])
			}
		case 2:
			c.line = c.line[:0]
		}
	case 'G', '`': // column
		c.cr = false
		c.cur = min(max(n, 1)-1, maxLine)
		// To column 1 over text: the line is being redrawn. To another column: the
		// program places its cursor (readline after a prompt), so the spaces before it
		// are the program's own ("name: (x) " keeps its space), not padding.
		c.redrawn = c.cur == 0 && (c.redrawn || len(c.line) > 0)
	case 'C', 'a': // forward
		c.applyCR()
		c.cur = min(c.cur+max(n, 1), maxLine)
	case 'D': // back
		c.applyCR()
		c.cur = max(c.cur-max(n, 1), 0)
	case 'E', 'F': // next/previous line: column 0
		c.cr = false
		c.cur = 0
		c.addrOK = false
		if b == 'F' {
			c.up(max(n, 1))
		}
	case 'A': // up
		c.up(max(n, 1))
		c.addrOK = false
	case 'B', 'S', 'T', 'L', 'M', 'r': // down, scroll, insert or delete lines, margins
		c.addrOK = false
	case 'H', 'f', 'd': // cursor position, line position
		c.jump()
		// The position of the last cursor address named again, with nothing but text
		// and motion along the row since: the cursor goes back to where that text
		// began, so what is written next overwrites it (a probe glyph written and
		// overwritten at once, as vim's ambiguous-width ▽).
		at := [2]int{max(n, 1), 0}
		if b == 'd' {
			at[1] = -1
		} else if f&fNextArg != 0 {
			at[1] = max(c.sv, 1)
		} else {
			at[1] = 1
		}
		if c.addrOK && at == c.addr && b != 'd' {
			c.cr = false
			c.cur = c.addrCur
		} else {
			c.addr, c.addrCur, c.addrOK = at, c.cursor(), b != 'd'
		}
	case 'J': // erase in display: a whole clear drops the blank lines held back
		if n == 2 || n == 3 {
			c.jump()
		}
	case 'X': // erase characters
		c.applyCR()
		if c.cur < len(c.line) {
			if end := c.cur + max(n, 1); end >= len(c.line) {
				c.line = c.line[:c.cur]
			} else {
				clear(c.line[c.cur:end])
			}
		}
	case 'P': // delete characters
		c.applyCR()
		if c.cur < len(c.line) {
			k := min(max(n, 1), len(c.line)-c.cur)
			copy(c.line[c.cur:], c.line[c.cur+k:])
			c.line = c.line[:len(c.line)-k]
		}
	case '@': // insert blanks
		c.applyCR()
		if c.cur < len(c.line) {
			k := min(max(n, 1), maxLine-c.cur)
			old := len(c.line)
			newLen := min(old+k, maxLine)
			c.line = grow(c.line, newLen-old)
			copy(c.line[c.cur+k:newLen], c.line[c.cur:old])
			clear(c.line[c.cur : c.cur+k])
		}
	case 's':
		if c.n == 0 {
			c.saved = c.cursor()
		}
	case 'u':
		if c.n == 0 {
			c.cr = false
			c.cur = min(c.saved, maxLine)
			c.addrOK = false
		}
	}
	return dst
}

// grow extends s by n elements (with unspecified contents).
func grow(s []rune, n int) []rune {
	if len(s)+n > cap(s) {
		t := make([]rune, len(s), max(2*cap(s), len(s)+n, 256))
		copy(t, s)
		s = t
	}
	return s[:len(s)+n]
}

// hasPrefix reports whether s starts with prefix, as text: a blank cell and
// a space are the same.
func hasPrefix(s, prefix []rune) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i, r := range prefix {
		if q := s[i]; q != r && !(isSpace(q) && isSpace(r)) {
			return false
		}
	}
	return true
}

func isSpace(r rune) bool { return r == ' ' || r == blank }

// appendRunes appends the UTF-8 encoding of rs to dst.
func appendRunes(dst []byte, rs []rune) []byte {
	n := len(dst)
	if n+len(rs) > cap(dst) {
		t := make([]byte, n, max(2*cap(dst), n+len(rs)+len(rs)/4))
		copy(t, dst)
		dst = t
	}
	d := dst[n : n+len(rs)]
	for i, r := range rs {
		if uint32(r) >= utf8.RuneSelf {
			dst = dst[:n+i]
			for _, r2 := range rs[i:] {
				if r2 == blank {
					r2 = ' '
				}
				dst = utf8.AppendRune(dst, r2)
			}
			return dst
		}
		b := byte(r)
		if b == blank {
			b = ' '
		}
		d[i] = b
	}
	return dst[:n+len(rs)]
}

// InLine reports, without allocating, whether a line is in progress: output since the
// last newline that later output may still change (the row of the last line, when the
// cursor went back up onto it, is one). Blank lines held back are not: their text says
// where it came from (see [Converter.Released]). Callers that map text back to raw
// offsets use it to know that the next text may stem from earlier bytes.
func (c *Converter) InLine() bool {
	return len(c.line) > 0 || len(c.tail) > 0 || c.need > 0 || c.onLast
}

// AtLineStart reports whether the converter is between lines: no line in progress and
// no escape sequence under way. A fresh Converter fed the stream from here on produces
// the same text, but for the blank lines held back (which [Converter.Released] maps),
// so callers may map text back to raw offsets at this point.
func (c *Converter) AtLineStart() bool { return !c.InLine() && c.st == sGround }
