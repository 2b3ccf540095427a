package main

import (
	"bytes"
	"testing"
)

func TestDetachFilter(t *testing.T) {
	t.Parallel()
	type step struct {
		in      string // "" = a timeout
		out     string
		detach  bool
		holding bool
	}
	tests := []struct {
		name  string
		keys  string
		steps []step
	}{
		{"plain", "ctrl-]", []step{{"abc", "abc", false, false}}},
		{"single detaches after the wait", "ctrl-]", []step{{"ab\x1d", "ab", false, true}, {"", "", true, false}}},
		{"twice is literal", "ctrl-]", []step{{"\x1d", "", false, true}, {"\x1dx", "\x1dx", false, false}}},
		{"then another key detaches", "ctrl-]", []step{{"\x1dq", "", true, false}}},
		{"docker split across reads", "ctrl-p,ctrl-q", []step{{"a\x10", "a", false, true}, {"\x11", "", true, false}}},
		{"docker mismatch replays", "ctrl-p,ctrl-q", []step{{"\x10", "", false, true}, {"x", "\x10x", false, false}}},
		{"docker partial times out", "ctrl-p,ctrl-q", []step{{"\x10", "", false, true}, {"", "\x10", false, false}}},
		{"docker repeated prefix", "ctrl-p,ctrl-q", []step{{"\x10\x10\x11", "\x10", true, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := parseDetachKeys(tt.keys)
			if err != nil {
				t.Fatal(err)
			}
			f := detachFilter{seq: keys}
			for i, s := range tt.steps {
				var out []byte
				var detach bool
				if s.in == "" {
					out, detach = f.timeout()
				} else {
					out, detach = f.feed([]byte(s.in))
				}
				if !bytes.Equal(out, []byte(s.out)) || detach != s.detach || f.holding() != s.holding {
					t.Errorf("step %d %q: out %q detach %v holding %v, want %q %v %v", i, s.in, out, detach, f.holding(), s.out, s.detach, s.holding)
				}
			}
		})
	}
	for _, bad := range []string{"", "ctrl-", "ctrl-1", "alt-x"} {
		if _, err := parseDetachKeys(bad); err == nil {
			t.Errorf("parseDetachKeys(%q) accepted", bad)
		}
	}
}
