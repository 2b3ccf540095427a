package session

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ptyhub/ptyhub/screen"
	"github.com/ptyhub/ptyhub/truncate"
)

// keyTable maps tmux-style key names to the bytes a terminal sends.
type keyTable = map[string]string

// keyTables holds the key names. Built at their first use, not at start: every CLI call
// would pay for building them.
var keyTables = sync.OnceValue(func() (t struct{ names, cursorApp, keypad, keypadApp keyTable }) {
	// names: normal cursor mode.
	t.names = keyTable{
		"enter": "\r", "return": "\r", "tab": "\t", "btab": "\x1b[Z", "space": " ",
		"bspace": "\x7f", "backspace": "\x7f", "escape": "\x1b", "esc": "\x1b",
		"up": "\x1b[A", "down": "\x1b[B", "right": "\x1b[C", "left": "\x1b[D",
		"home": "\x1b[H", "end": "\x1b[F", "pageup": "\x1b[5~", "ppage": "\x1b[5~", "pgup": "\x1b[5~",
		"pagedown": "\x1b[6~", "npage": "\x1b[6~", "pgdn": "\x1b[6~",
		"insert": "\x1b[2~", "ic": "\x1b[2~", "delete": "\x1b[3~", "dc": "\x1b[3~",
		"f1": "\x1bOP", "f2": "\x1bOQ", "f3": "\x1bOR", "f4": "\x1bOS",
		"f5": "\x1b[15~", "f6": "\x1b[17~", "f7": "\x1b[18~", "f8": "\x1b[19~",
		"f9": "\x1b[20~", "f10": "\x1b[21~", "f11": "\x1b[23~", "f12": "\x1b[24~",
	}
	// What keys send instead when the program set the cursor-key mode (DECCKM, ESC [ ? 1
	// h: less, vim and readline set it) or the keypad's application mode (ESC =).
	t.cursorApp = keyTable{
		"up": "\x1bOA", "down": "\x1bOB", "right": "\x1bOC", "left": "\x1bOD",
		"home": "\x1bOH", "end": "\x1bOF",
	}
	t.keypad = keyTable{ // normal mode; application mode: keypadApp
		"kp0": "0", "kp1": "1", "kp2": "2", "kp3": "3", "kp4": "4", "kp5": "5", "kp6": "6",
		"kp7": "7", "kp8": "8", "kp9": "9", "kp.": ".", "kp/": "/", "kp*": "*", "kp-": "-",
		"kp+": "+", "kpenter": "\r",
	}
	t.keypadApp = keyTable{
		"kp0": "\x1bOp", "kp1": "\x1bOq", "kp2": "\x1bOr", "kp3": "\x1bOs", "kp4": "\x1bOt",
		"kp5": "\x1bOu", "kp6": "\x1bOv", "kp7": "\x1bOw", "kp8": "\x1bOx", "kp9": "\x1bOy",
		"kp.": "\x1bOn", "kp/": "\x1bOo", "kp*": "\x1bOj", "kp-": "\x1bOm", "kp+": "\x1bOk",
		"kpenter": "\x1bOM",
	}
	return t
})

// encodeKeys turns tmux-style key names into bytes: named keys (Enter, Up, F1, KP5…), C-x
// (control), M-x (meta: ESC prefix), and single characters typed as themselves. Cursor and
// keypad keys follow the terminal's modes (as a terminal's keys do).
func encodeKeys(keys []string, modes screen.Modes) ([]byte, error) {
	var out []byte
	for _, k := range keys {
		b, err := encodeKey(k, modes)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

func encodeKey(k string, modes screen.Modes) ([]byte, error) {
	if k == "" {
		return nil, fmt.Errorf("%w: empty key name", ErrInvalid)
	}
	name := strings.ToLower(k)
	if s, ok := keyTables().cursorApp[name]; ok && modes.CursorKeys {
		return []byte(s), nil
	}
	if s, ok := keyTables().keypadApp[name]; ok && modes.KeypadApp {
		return []byte(s), nil
	}
	if s, ok := keyTables().keypad[name]; ok {
		return []byte(s), nil
	}
	if s, ok := keyTables().names[name]; ok {
		return []byte(s), nil
	}
	if len(k) > 2 && (k[:2] == "M-" || k[:2] == "m-") {
		b, err := encodeKey(k[2:], modes)
		if err != nil {
			return nil, err
		}
		return append([]byte{0x1b}, b...), nil
	}
	if len(k) > 2 && (k[:2] == "C-" || k[:2] == "c-" || k[0] == '^') || len(k) == 2 && k[0] == '^' {
		rest := k[2:]
		if k[0] == '^' {
			rest = k[1:]
		}
		if len(rest) == 1 {
			c := rest[0]
			switch {
			case c >= 'a' && c <= 'z':
				return []byte{c - 'a' + 1}, nil
			case c >= '@' && c <= '_':
				return []byte{c - '@'}, nil
			case c == '?':
				return []byte{0x7f}, nil
			case c == ' ':
				return []byte{0}, nil
			}
		}
	}
	if r := []rune(k); len(r) == 1 {
		return []byte(k), nil
	}
	return nil, argError("keys", fmt.Sprintf(": unknown key %q (use names like Enter, Tab, Escape, Up, Down, Left, Right, BSpace, F1-F12, PageUp, Home, KP0-KP9, KPEnter, C-c, M-x, or a single character)", k))
}

// yieldDuration validates a yield in ms; nil means def. It returns a warning when clamped.
func yieldDuration(ms *int64, def int64) (time.Duration, string, error) {
	if ms == nil {
		return time.Duration(def) * time.Millisecond, "", nil
	}
	v := *ms
	if v < 0 {
		return 0, "", argError("yield_time_ms", fmt.Sprintf(" must be 0 or more (got %d ms); 0 returns what is there now", v))
	}
	if v > MaxYieldMs {
		return MaxYieldMs * time.Millisecond,
			fmt.Sprintf("yield_time_ms %d clamped to the maximum %d", v, MaxYieldMs), nil
	}
	return time.Duration(v) * time.Millisecond, "", nil
}

// tokenBudget validates max_output_tokens; nil means the default. Out-of-range values are
// clamped, with a warning.
func tokenBudget(n *int64) (int, string) {
	if n == nil {
		return truncate.DefaultBudget, ""
	}
	b := truncate.Clamp(*n)
	if int64(b) != *n {
		return b, fmt.Sprintf("max_output_tokens %d clamped to %d", *n, b)
	}
	return b, ""
}

// longestCanonLine is the length of the longest line of p as the canonical-mode line
// discipline sees it (lines end at NL, and at CR when ICRNL maps it, and at VEOF).
func longestCanonLine(p []byte, icrnl bool, veof byte) int {
	longest, cur := 0, 0
	for _, c := range p {
		if c == '\n' || (icrnl && c == '\r') || (veof != 0 && c == veof) {
			cur = 0
			continue
		}
		cur++
		longest = max(longest, cur)
	}
	return longest
}

// endsMidLine reports whether p ends with a partial line (bytes after the last newline).
func endsMidLine(p []byte) bool {
	return len(p) > 0 && !bytes.HasSuffix(p, []byte{'\n'}) && !bytes.HasSuffix(p, []byte{'\r'})
}
