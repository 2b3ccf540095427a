package screen

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Query is a terminal query a program can send and wait to have answered.
type Query uint8

// Queries recognised by Scanner.
const (
	QueryNone         Query = iota
	QueryCPR                // CSI 6 n: cursor position report
	QueryStatus             // CSI 5 n: device status
	QueryDA1                // CSI c, CSI 0 c: primary device attributes
	QueryDA2                // CSI > c, CSI > 0 c: secondary device attributes
	QueryFg                 // OSC 10 ; ? : default foreground colour
	QueryBg                 // OSC 11 ; ? : default background colour
	QueryDA3                // CSI = c, CSI = 0 c: tertiary device attributes
	QueryVersion            // CSI > q, CSI > 0 q: XTVERSION, the terminal's name and version
	QueryMode               // CSI ? Ps $ p (DEC) or CSI Ps $ p (ANSI): DECRQM, a mode's state
	QuerySetting            // DCS $ q Pt ST: DECRQSS, a setting's value
	QueryTermcap            // DCS + q Pt ST: XTGETTCAP, terminfo capabilities
	QueryCursorColour       // OSC 12 ; ? : cursor colour
	QueryPalette            // OSC 4 ; c ; ? … : palette colours
	QueryWindow             // CSI 14 t, CSI 16 t, CSI 18 t: text area size in pixels, cell size, in cells
	QueryExtCPR             // CSI ? 6 n: DECXCPR, cursor position with the page
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
	// Arg is the query's argument: the mode of QueryMode ("?12" for a DEC mode), the
	// setting of QuerySetting, the hex names of QueryTermcap, the colour list of
	// QueryPalette ("1;?;2;?"), the operation of QueryWindow ("18").
	Arg string
	// ModeState is the state of QueryMode's mode as the scanner tracked it: 1 set, 2
	// reset, 0 when the scanner does not track the mode.
	ModeState int
	// Rows and Cols are the terminal's size, for QueryWindow; the caller of Answer fills
	// them in (Scanner does not know the size).
	Rows, Cols int
}

// scanner states.
const (
	stGround = iota
	stEsc
	stEscInt // ESC with intermediates (charset designation …): skipped up to the final
	stCSI
	stOSC
	stOSCEsc
	stStr // SOS, PM, APC: skipped up to ST
	stStrEsc
	stDCS // DCS: kept (up to maxSeq) up to ST, for DECRQSS and XTGETTCAP
	stDCSEsc
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
			case c == 'P':
				sc.state = stDCS
			case c == 'X' || c == '^' || c == '_':
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
		case stDCS:
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				j = len(p) - i
			}
			if sc.n+j <= len(sc.seq) {
				sc.n += copy(sc.seq[sc.n:], p[i:i+j])
			} else {
				sc.long = true
			}
			i += j
			if i < len(p) {
				sc.state = stDCSEsc
			}
		case stDCSEsc:
			if c == '\\' {
				sc.dcs(base+int64(i)+1, fn)
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
		case "?6":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryExtCPR, Off: end})
		}
	case 'c':
		switch string(s) {
		case "", "0":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryDA1, Off: end})
		case ">", ">0":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryDA2, Off: end})
		case "=", "=0":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryDA3, Off: end})
		}
	case 'q':
		switch string(s) {
		case ">", ">0":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryVersion, Off: end})
		}
	case 't':
		switch string(s) {
		case "14", "16", "18":
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryWindow, Off: end, Arg: string(s)})
		}
	case 'p':
		// DECRQM: "?12$" (DEC private mode 12) or "4$" (ANSI mode 4).
		mode, ok := bytes.CutSuffix(s, []byte{'$'})
		digits := bytes.TrimPrefix(mode, []byte{'?'})
		if !ok || len(digits) == 0 || len(digits) > 5 || bytes.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
			return
		}
		e := Event{Kind: EventQuery, Query: QueryMode, Off: end, Arg: string(mode)}
		if mode[0] == '?' {
			e.ModeState = sc.modeState(string(digits))
		}
		sc.emit(fn, e)
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

// modeState is a DEC private mode's DECRQM state as far as the scanner tracks it: 1 set,
// 2 reset, 0 not tracked.
func (sc *Scanner) modeState(mode string) int {
	var set bool
	switch mode {
	case "1049", "1047", "47":
		set = sc.modes.AltScreen
	case "25":
		set = !sc.modes.CursorHidden
	case "1":
		set = sc.modes.CursorKeys
	default:
		return 0
	}
	if set {
		return 1
	}
	return 2
}

// dcs handles a complete DCS string ending before offset end: DECRQSS and XTGETTCAP.
func (sc *Scanner) dcs(end int64, fn func(Event)) {
	if sc.long {
		return
	}
	s := sc.seq[:sc.n]
	if arg, ok := bytes.CutPrefix(s, []byte("$q")); ok {
		sc.emit(fn, Event{Kind: EventQuery, Query: QuerySetting, Off: end, Arg: string(arg)})
	} else if arg, ok := bytes.CutPrefix(s, []byte("+q")); ok {
		sc.emit(fn, Event{Kind: EventQuery, Query: QueryTermcap, Off: end, Arg: string(arg)})
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
	case "12;?":
		sc.emit(fn, Event{Kind: EventQuery, Query: QueryCursorColour, Off: end, ST: st})
	default:
		if arg, ok := bytes.CutPrefix(sc.seq[:sc.n], []byte("4;")); ok && bytes.HasSuffix(arg, []byte(";?")) {
			sc.emit(fn, Event{Kind: EventQuery, Query: QueryPalette, Off: end, ST: st, Arg: string(arg)})
		}
	}
}

// Version is what ptyhub's terminal answers to XTVERSION.
const Version = "ptyhub"

// Cell size in pixels reported to the window queries (a terminal without pixels has
// none; programs that divide by it get a common one).
const cellWidth, cellHeight = 8, 16

// Answer returns the reply a terminal sends to query q of event e; row and col (1-based)
// are the cursor position, used by QueryCPR and QueryExtCPR only. The replies are those
// of a conservative xterm-compatible terminal with a dark background (tmux's DA1): modes
// the scanner does not track are "not recognised", settings and terminfo capabilities
// are refused as invalid, and palette colours are xterm's defaults. nil means no answer.
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
	case QueryCursorColour:
		return []byte("\x1b]12;rgb:ffff/ffff/ffff" + st)
	case QueryDA3:
		return []byte("\x1bP!|00000000\x1b\\")
	case QueryVersion:
		return []byte("\x1bP>|" + Version + "\x1b\\")
	case QueryExtCPR:
		return []byte("\x1b[?" + strconv.Itoa(row) + ";" + strconv.Itoa(col) + ";1R")
	case QueryMode:
		return []byte("\x1b[" + e.Arg + ";" + strconv.Itoa(e.ModeState) + "$y")
	case QuerySetting:
		if e.Arg == "m" { // the pen: answered as reset, which is all a program restores
			return []byte("\x1bP1$r0m\x1b\\")
		}
		return []byte("\x1bP0$r\x1b\\")
	case QueryTermcap:
		return []byte("\x1bP0+r" + e.Arg + "\x1b\\")
	case QueryWindow:
		rows, cols := max(e.Rows, 1), max(e.Cols, 1)
		switch e.Arg {
		case "14":
			return []byte("\x1b[4;" + strconv.Itoa(rows*cellHeight) + ";" + strconv.Itoa(cols*cellWidth) + "t")
		case "16":
			return []byte("\x1b[6;" + strconv.Itoa(cellHeight) + ";" + strconv.Itoa(cellWidth) + "t")
		}
		return []byte("\x1b[8;" + strconv.Itoa(rows) + ";" + strconv.Itoa(cols) + "t")
	case QueryPalette:
		return paletteAnswer(e.Arg, st)
	}
	return nil
}

// paletteAnswer answers OSC 4 "c;?;c;?…" with xterm's default colour of each c, one OSC
// per colour as xterm does; a malformed list gets no answer.
func paletteAnswer(arg, st string) []byte {
	f := strings.Split(arg, ";")
	if len(f)%2 != 0 {
		return nil
	}
	var b []byte
	for i := 0; i < len(f); i += 2 {
		c, err := strconv.Atoi(f[i])
		if err != nil || c < 0 || c > 255 || f[i+1] != "?" {
			return nil
		}
		r, g, bl := xtermColour(c)
		b = append(b, "\x1b]4;"+f[i]+";"+fmt.Sprintf("rgb:%02x%02x/%02x%02x/%02x%02x", r, r, g, g, bl, bl)+st...)
	}
	return b
}

// xtermColour is xterm's default palette: 16 system colours, the 6×6×6 cube, 24 greys.
func xtermColour(c int) (r, g, b uint8) {
	system := [16][3]uint8{{0, 0, 0}, {205, 0, 0}, {0, 205, 0}, {205, 205, 0}, {0, 0, 238}, {205, 0, 205},
		{0, 205, 205}, {229, 229, 229}, {127, 127, 127}, {255, 0, 0}, {0, 255, 0}, {255, 255, 0},
		{92, 92, 255}, {255, 0, 255}, {0, 255, 255}, {255, 255, 255}}
	switch {
	case c < 16:
		return system[c][0], system[c][1], system[c][2]
	case c < 232:
		level := func(v int) uint8 {
			if v == 0 {
				return 0
			}
			return uint8(55 + 40*v)
		}
		c -= 16
		return level(c / 36), level(c / 6 % 6), level(c % 6)
	}
	v := uint8(8 + 10*(c-232))
	return v, v, v
}
