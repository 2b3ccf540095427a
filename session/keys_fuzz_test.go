package session

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ptyhub/ptyhub/screen"
)

// FuzzEncodeKey checks the key-name parser on arbitrary names: it never panics, refuses
// with ErrInvalid or returns bytes, and keeps its documented rules: a single character
// is itself, M-x is ESC then x, C-letter is one control byte, names ignore case.
func FuzzEncodeKey(f *testing.F) {
	for _, k := range []string{"Enter", "C-c", "M-x", "M-C-a", "^D", "F12", "é", "C-?", "C- ", "", "M-", "up", "PgDn", "C-€"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		b, err := encodeKey(k, screen.Modes{})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: error %v does not wrap ErrInvalid", k, err)
			}
			return
		}
		if len(b) == 0 {
			t.Fatalf("%q: no bytes", k)
		}
		if utf8.RuneCountInString(k) == 1 && !bytes.Equal(b, []byte(k)) {
			if _, named := keyTables().names[strings.ToLower(k)]; !named {
				t.Fatalf("%q typed as %q", k, b)
			}
		}
		if len(k) > 2 && strings.EqualFold(k[:2], "M-") {
			rest, err := encodeKey(k[2:], screen.Modes{})
			if err != nil || !bytes.Equal(b, append([]byte{0x1b}, rest...)) {
				t.Fatalf("%q = %q, want ESC + %q (%v)", k, b, rest, err)
			}
		}
		if len(k) == 3 && strings.EqualFold(k[:2], "C-") && (k[2]|0x20) >= 'a' && (k[2]|0x20) <= 'z' {
			if len(b) != 1 || b[0] != (k[2]|0x20)-'a'+1 {
				t.Fatalf("%q = %q", k, b)
			}
		}
		if _, named := keyTables().names[strings.ToLower(k)]; named {
			if u, err := encodeKey(strings.ToUpper(k), screen.Modes{}); err != nil || !bytes.Equal(u, b) {
				t.Fatalf("%q and %q differ: %q, %q (%v)", k, strings.ToUpper(k), b, u, err)
			}
		}
	})
}
