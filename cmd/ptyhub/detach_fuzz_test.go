package main

import (
	"bytes"
	"testing"
)

// FuzzDetachFilter checks the detach-key matcher against a reference model, for
// single-key and multi-key sequences, with the input cut into reads at arbitrary
// points: a cut never changes what is typed or whether it detaches, and nothing typed
// is lost or invented.
func FuzzDetachFilter(f *testing.F) {
	f.Add("ctrl-]", []byte("ls\x1d\x1dx\x1d"), uint64(3))
	f.Add("ctrl-p,ctrl-q", []byte("a\x10b\x10\x10\x11rest"), uint64(1))
	f.Add("ctrl-p,ctrl-q", []byte("\x10\x10\x10"), uint64(7))
	f.Add("a,b,c", []byte("aababcx"), uint64(5))
	f.Fuzz(func(t *testing.T, spec string, in []byte, seed uint64) {
		seq, err := parseDetachKeys(spec)
		if err != nil {
			return
		}
		typed, detached, held := modelDetach(seq, in)
		// Cut into reads by the seed.
		var fl detachFilter
		fl.seq = seq
		var got []byte
		gotDetach := false
		x := seed | 1
		for i := 0; i < len(in) && !gotDetach; {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			n := min(int(x%5)+1, len(in)-i)
			out, d := fl.feed(in[i : i+n])
			got = append(got, out...)
			gotDetach = d
			i += n
		}
		if gotDetach != detached || !bytes.Equal(got, typed) {
			t.Fatalf("seq %q input %q: typed %q detach %v, want %q %v", seq, in, got, gotDetach, typed, detached)
		}
		if !detached && fl.holding() != (len(held) > 0) {
			t.Fatalf("seq %q input %q: holding %v, model holds %q", seq, in, fl.holding(), held)
		}
		if !detached && len(seq) > 1 {
			// Nothing lost: what was typed plus what is held is the input.
			out, d := fl.timeout()
			if d || !bytes.Equal(append(got, out...), in) {
				t.Fatalf("seq %q input %q: typed %q + %q after the wait", seq, in, got, out)
			}
		}
	})
}

// modelDetach is the reference: what a byte-at-a-time reading of the documented
// behaviour types, whether it detaches, and what it holds at the end.
func modelDetach(seq, in []byte) (typed []byte, detach bool, held []byte) {
	if len(seq) == 1 {
		k := seq[0]
		for i := 0; i < len(in); i++ {
			if in[i] != k {
				typed = append(typed, in[i])
				continue
			}
			if i+1 == len(in) {
				return typed, false, in[i:]
			}
			if in[i+1] != k {
				return typed, true, nil
			}
			typed = append(typed, k)
			i++
		}
		return typed, false, nil
	}
	m := 0
	for _, b := range in {
		if b == seq[m] {
			if m++; m == len(seq) {
				return typed, true, nil
			}
			continue
		}
		if m > 0 {
			typed = append(typed, seq[:m]...)
			m = 0
			if b == seq[0] {
				m = 1
				continue
			}
		}
		typed = append(typed, b)
	}
	return typed, false, seq[:m]
}
