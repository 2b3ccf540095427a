package main

// escFilter removes, from output on its way to a human's terminal, the escape sequences a
// program must not use to reach past the session:
//
//   - OSC 52 (set or query the clipboard): a session could overwrite what the human
//     pastes next, or read it;
//   - CSI 20 t / CSI 21 t (report the icon or window title): the terminal would type the
//     title back into the session, as if the human had.
//
// Everything else passes unchanged, in order. State carries across calls, so a sequence
// split across reads is recognised; what is held back while undecided is bounded (a
// longer sequence passes through as it is).
type escFilter struct {
	st   int    // fGround, fEsc, fOSC, fCSI, fDrop, fDropEsc
	held []byte // bytes of the sequence not yet passed on
}

const (
	fGround  = iota
	fEsc     // after ESC
	fOSC     // in the number of an OSC, held
	fCSI     // in a CSI, held
	fDrop    // inside a dropped OSC, until BEL or ST
	fDropEsc // ESC inside a dropped OSC: \ ends it
)

// maxHeld bounds what a sequence may hold back before it is passed on undecided.
const maxHeld = 64

// Filter appends p, filtered, to dst.
func (f *escFilter) Filter(dst, p []byte) []byte {
	for _, b := range p {
		if b == 0x1b && (f.st == fEsc || f.st == fOSC || f.st == fCSI) {
			// A new sequence begins: the held one was not one to drop.
			dst = f.pass(dst)
			f.st, f.held = fEsc, append(f.held[:0], b)
			continue
		}
		switch f.st {
		case fGround:
			if b == 0x1b {
				f.st, f.held = fEsc, append(f.held[:0], b)
				continue
			}
			dst = append(dst, b)
		case fEsc:
			switch b {
			case ']':
				f.st, f.held = fOSC, append(f.held, b)
			case '[':
				f.st, f.held = fCSI, append(f.held, b)
			default:
				dst = f.pass(dst, b)
			}
		case fOSC:
			f.held = append(f.held, b)
			switch {
			case b == ';' || b == 0x07:
				if string(f.held) == "\x1b]52;" || string(f.held) == "\x1b]52\x07" {
					f.held = f.held[:0]
					f.st = fDrop
					if b == 0x07 {
						f.st = fGround
					}
					continue
				}
				dst = f.pass(dst)
			case b < '0' || b > '9' || len(f.held) > maxHeld:
				dst = f.pass(dst)
			}
		case fCSI:
			f.held = append(f.held, b)
			if b >= 0x40 && b <= 0x7e { // the final byte
				if b == 't' && (string(f.held) == "\x1b[20t" || string(f.held) == "\x1b[21t") {
					f.st, f.held = fGround, f.held[:0]
					continue
				}
				dst = f.pass(dst)
			} else if len(f.held) > maxHeld {
				dst = f.pass(dst)
			}
		case fDrop:
			switch b {
			case 0x07:
				f.st = fGround
			case 0x1b:
				f.st = fDropEsc
			}
		case fDropEsc:
			if b == '\\' {
				f.st = fGround
			} else if b != 0x1b {
				f.st = fDrop
			}
		}
	}
	return dst
}

// pass releases what is held (plus extra) unchanged and returns to the ground state.
func (f *escFilter) pass(dst []byte, extra ...byte) []byte {
	dst = append(append(dst, f.held...), extra...)
	f.st, f.held = fGround, f.held[:0]
	return dst
}
