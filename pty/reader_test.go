package pty

import (
	"io"
	"os"
	"sync/atomic"
	"testing"
)

// TestFileReaderPipe: on a pipe, a FileReader returns what was written, calls idle when a
// read finds nothing (held false by then), and ends with io.EOF once the write end closes.
func TestFileReaderPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := NewFileReader(r)
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Bool
	idles := 0
	idle := checkedIdle(t, &held, &idles, func() {
		if idles == 1 { // the reader waits now: give it something, then the end
			w.Write([]byte("hi"))
			w.Close()
		}
	})
	buf := make([]byte, 16)
	n, err := fr.ReadHold(buf, &held, idle)
	if err != nil || string(buf[:n]) != "hi" || !held.Load() {
		t.Fatalf("ReadHold: %q, %v, held %v", buf[:n], err, held.Load())
	}
	if idles != 1 {
		t.Fatalf("idle called %d times before the first bytes, want 1", idles)
	}
	held.Store(false)
	if n, err := fr.ReadHold(buf, &held, idle); n != 0 || err != io.EOF {
		t.Fatalf("after the write end closed: %d, %v", n, err)
	}
}

// checkedIdle returns a ReadHold idle hook that fails t if it runs while held is true,
// counts its calls in *n, then calls then (if not nil).
func checkedIdle(t *testing.T, held *atomic.Bool, n *int, then func()) func() {
	return func() {
		if held.Load() {
			t.Error("idle called while held is true")
		}
		*n++
		if then != nil {
			then()
		}
	}
}
