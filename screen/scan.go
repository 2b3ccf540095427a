package screen

import (
	"bytes"
	"strconv"
)

// Query is a terminal query a program can send and wait to have answered.
type Query uint8

// Queries recognised by Scanner.
const (
	QueryNone   Query = iota
	QueryCPR          // CSI 6 n: cursor position report
	QueryStatus       // CSI 5 n: device status
	QueryDA1          // CSI c, CSI 0 c: primary device attributes
	QueryDA2          // CSI > c, CSI > 0 c: secondary device attributes
	QueryFg           // OSC 10 ; ? : default foreground colour
	QueryBg           // OSC 11 ; ? : default background colour
)

// EventKind says what a scanner Event reports.
type EventKind uint8

// Kinds of Event.
const (
	// EventQuery: a complete query ended at Off (one past its last byte).
	EventQuery EventKind = iota + 1
	// EventClear: a sequence that wipes the whole screen (CSI 2 J, RIS, entering the
	// alternate screen) starts at Off. Modes is the state just before it.
	EventClear
)

// Modes is the part of a terminal's state that Scanner tracks because a replay from the
// middle of a stream would otherwise lose it.
type Modes struct {
	AltScreen    bool // DEC modes 1049, 1047, 47
	CursorHidden bool // DEC mode 25 reset
	// CursorKeys is DECCKM (DEC mode 1): cursor keys send ESC O A, not ESC [ A.
	CursorKeys bool
	// KeypadApp is DECKPAM (ESC =, until ESC >): the keypad sends ESC O sequences.
	KeypadApp bool
}

// Event is one thing Scanner recognised.
type Event struct {
	Kind  EventKind
	Query Query
	Off   int64 // see EventKind
	// ST is set for an OSC query terminated by ESC \ (answer with the same terminator).
	ST    bool
	Modes Modes // EventClear only
}

// scanner states.
const (
	stGround = iota
	stEsc
	stEscInt // ESC with intermediates (charset designation …): skipped up to the final
	stCSI
	stOSC
	stOSCEsc
	stStr // DCS, SOS, PM, APC: skipped up to ST
	stStrEsc
)

// maxSeq bounds what Scanner keeps of one sequence: queries and mode changes are short,
// anything longer is skipped without being kept.
const maxSeq = 64

// Scanner is a streaming recogniser of terminal queries, screen clears and the modes of
// Modes in a byte stream. Its state survives chunk boundaries, so a sequence split across
// reads is recognised once, at the chunk holding its last byte. It allocates nothing
// per call and skips plain text with a memchr, so it runs at hundreds of MB/s. The zero
// value is ready at offset 0 in the ground state. A Scanner is not safe for concurrent
// use.
type Scanner struct {
	state int
	start int64 // offset of the ESC that began the current sequence
	seq   [maxSeq]byte
	n     int
	long  bool // the current sequence overflowed seq
	modes Modes
}

// Modes returns the modes as of the last byte scanned.
func (sc *Scanner) Modes() Modes { return sc.modes }

// Reset returns the parser to the ground state (after a gap in the stream), keeping the
// modes, which are the best knowledge there is.
func (sc *Scanner) Reset() { sc.state, sc.n, sc.long = stGround, 0, false }

// Scan feeds p, whose first byte is at stream offset base, and calls fn for every event,
// in stream order. fn may be nil.
func (sc *Scanner) Scan(p []byte, base int64, fn func(Event)) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch sc.state {
		case stGround:
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				return
			}
			i += j
			sc.state, sc.start = stEsc, base+int64(i)
		case stEsc:
			sc.n, sc.long = 0, false
			switch {
			case c == '[':
				sc.state = stCSI
			case c == ']':
				sc.state = stOSC
			case c == 'P' || c == 'X' || c == '^' || c == '_':
				sc.state = stStr
			case c == 'c': // RIS
				sc.emit(fn, Event{Kind: EventClear, Off: sc.start, Modes: sc.modes})
				sc.modes = Modes{}
				sc.state = stGround
			case c == 0x1b:
				sc.start = base + int64(i)
			case c == '=' || c == '>':
				sc.modes.KeypadApp = c == '='
				sc.state = stGround
			case c >= 0x20 && c < 0x30:
				sc.state = stEscInt
			default:
				sc.state = stGround
			}
		case stEscInt:
			if c == 0x1b {
				sc.state, sc.start = stEsc, base+int64(i)
			} else if c >= 0x30 || c == 0x18 || c == 0x1a {
				sc.state = stGround
			}
		case stCSI:
			switch {
			case c >= 0x40 && c <= 0x7e:
				sc.csi(c, base+int64(i)+1, fn)
				sc.state = stGround
			case c == 0x1b:
				sc.state, sc.start = stEsc, base+int64(i)
			case c == 0x18 || c == 0x1a: // CAN, SUB abort
				sc.state = stGround
			case c < 0x20: // C0 controls execute inside CSI and do not end it
			default:
				sc.put(c)
			}
		case stOSC:
			switch c {
			case 0x07:
				sc.osc(base+int64(i)+1, false, fn)
				sc.state = stGround
			case 0x1b:
				sc.state = stOSCEsc
			case 0x18, 0x1a:
				sc.state = stGround
			default:
				sc.put(c)
			}
		case stOSCEsc:
			if c == '\\' {
				sc.osc(base+int64(i)+1, true, fn)
				sc.state = stGround
			} else { // an ESC ends the string; this byte follows it
				sc.state, sc.start = stEsc, base+int64(i)-1
				i--
			}
		case stStr:
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				return
			}
			i += j
			sc.state = stStrEsc
		case stStrEsc:
			if c == '\\' {
				sc.state = stGround
			} else {
				sc.state, sc.start = stEsc, base+int64(i)-1
				i--
			}
		}
	}
}

func (sc *Scanner) put(c byte) {
	if sc.n < len(sc.seq) {
		sc.seq[sc.n] = c
		sc.n++
	} else {
		sc.long = true
	}
}

func (sc *Scanner) emit(fn func(Event), e Event) {
	if fn != nil {
		fn(e)
	}
}

// csi handles a complete CSI sequence with final byte f ending before offset end.
func (sc *Scanner) csi(f byte, end int64, fn func(Event)) {
	if sc.long {
		return
	}
	s := sc.seq[:sc.n]
	switch f {
	case 'n':
		switch string(s) {
		case "6":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryCPR, Off: end})
		case "5":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryStatus, Off: end})
		}
	case 'c':
		switch string(s) {
		case "", "0":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryDA1, Off: end})
		case ">", ">0":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryDA2, Off: end})
		}
	case 'J':
		if string(s) == "2" {
			sc.emit(fn, Event{Kind: EventClear, Off: sc.start, Modes: sc.modes})
		}
	case 'h', 'l':
		if len(s) == 0 || s[0] != '?' {
			return
		}
		set := f == 'h'
		for p := range bytes.SplitSeq(s[1:], []byte{';'}) {
			switch string(p) {
			case "1049", "1047", "47":
				if set && !sc.modes.AltScreen {
					sc.emit(fn, Event{Kind: EventClear, Off: sc.start, Modes: sc.modes})
				}
				sc.modes.AltScreen = set
			case "25":
				sc.modes.CursorHidden = !set
			case "1":
				sc.modes.CursorKeys = set
			}
		}
	}
}

// osc handles a complete OSC string ending before offset end.
func (sc *Scanner) osc(end int64, st bool, fn func(Event)) {
	if sc.long {
		return
	}
	switch string(sc.seq[:sc.n]) {
	case "10;?":
		sc.emit(fn, Event{Kind: EventQuery, Query: QueryFg, Off: end, ST: st})
	case "11;?":
		sc.emit(fn, Event{Kind: EventQuery, Query: QueryBg, Off: end, ST: st})
	}
}

// Answer returns the reply a terminal sends to query q of event e; row and col (1-based)
// are the cursor position, used by QueryCPR only. The replies are those of a
// conservative xterm-compatible terminal with a dark background (tmux's DA1).
func Answer(e Event, row, col int) []byte {
	st := "\x07"
	if e.ST {
		st = "\x1b\\"
	}
	switch e.Query {
	case QueryCPR:
		b := append([]byte("\x1b["), strconv.Itoa(row)...)
		b = append(b, ';')
		b = append(b, strconv.Itoa(col)...)
		return append(b, 'R')
	case QueryStatus:
		return []byte("\x1b[0n")
	case QueryDA1:
		return []byte("\x1b[?1;2c")
	case QueryDA2:
		return []byte("\x1b[>1;10;0c")
	case QueryFg:
		return []byte("\x1b]10;rgb:ffff/ffff/ffff" + st)
	case QueryBg:
		return []byte("\x1b]11;rgb:0000/0000/0000" + st)
	}
	return nil
}
