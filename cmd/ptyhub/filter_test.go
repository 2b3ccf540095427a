package main

import "testing"

func TestEscFilter(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text\r\n", "plain text\r\n"},
		{"a\x1b]52;c;ZWNobyBwd25lZA==\x07b", "ab"},
		{"a\x1b]52;c;ZWNobyBwd25lZA==\x1b\\b", "ab"},
		{"a\x1b]52;c;?\x07b", "ab"},
		{"\x1b]0;my title\x07x", "\x1b]0;my title\x07x"},
		{"\x1b]10;?\x1b\\", "\x1b]10;?\x1b\\"},
		{"\x1b]520;x\x07", "\x1b]520;x\x07"},
		{"\x1b[21tA\x1b[20tB", "AB"},
		{"\x1b[8;24;80t\x1b[31mred\x1b[0m", "\x1b[8;24;80t\x1b[31mred\x1b[0m"},
		{"\x1b[?1049h\x1b[H\x1b7x\x1b8", "\x1b[?1049h\x1b[H\x1b7x\x1b8"},
		{"\x1b\x1b[21t!", "\x1b!"},
		{"é€\x1b]52;p;AAAA\x07✓", "é€✓"},
	}
	for _, c := range cases {
		var f escFilter
		if got := string(f.Filter(nil, []byte(c.in))); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
		// Split anywhere, byte by byte: the same result.
		for cut := 0; cut <= len(c.in); cut++ {
			var f escFilter
			got := f.Filter(nil, []byte(c.in[:cut]))
			got = f.Filter(got, []byte(c.in[cut:]))
			if string(got) != c.want {
				t.Errorf("%q split at %d: got %q", c.in, cut, got)
			}
		}
		var g escFilter
		var got []byte
		for i := 0; i < len(c.in); i++ {
			got = g.Filter(got, []byte{c.in[i]})
		}
		if string(got) != c.want {
			t.Errorf("%q byte by byte: got %q", c.in, got)
		}
	}
}
