package session

import "testing"

// TestTailLinesStartBlankLines: the last n lines of a text view start where they do in
// raw, counting the blank lines the program printed (which the text view holds back
// until the next line) and not those a prompt reserves and moves back up over.
func TestTailLinesStartBlankLines(t *testing.T) {
	cases := []struct {
		raw  string
		n    int
		want int
	}{
		{"a\n\n\nb\n", 1, 4},
		{"a\n\n\nb\n", 2, 3},
		{"a\n\n\nb\n", 3, 2},
		{"a\n\n\nb\n", 4, 0},
		{"a\r\n\r\n\r\nb\r\n", 2, 5},
		// "> hello" redraws the prompt's row: the rows reserved under it are no lines.
		{"x\n> \r\n\r\n\r\n\x1b[3A\x1b[2Chello\r\nok\n", 2, 6},
	}
	for _, tc := range cases {
		if got := tailLinesStart([]byte(tc.raw), tc.n); got != tc.want {
			t.Errorf("tailLinesStart(%q, %d) = %d, want %d", tc.raw, tc.n, got, tc.want)
		}
	}
}
