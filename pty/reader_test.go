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
	fr, w := pipeFileReader(t)
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

// pipeFileReader returns a FileReader on the read end of a new pipe (closed at the
// end of the test) and the pipe's write end.
func pipeFileReader(t *testing.T) (*FileReader, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	fr, err := NewFileReader(r)
	if err != nil {
		t.Fatal(err)
	}
	return fr, w
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

// TestFileReaderPooled: ReadPooled returns what was written in a buffer of the pool's,
// holds no buffer while it waits for output (the buffer is back in the pool when idle
// runs), and ends with io.EOF and no buffer once the write end closes.
func TestFileReaderPooled(t *testing.T) {
	fr, w := pipeFileReader(t)
	pool := NewBufferPool(64)
	var held atomic.Bool
	idles := 0
	idle := checkedIdle(t, &held, &idles, func() {
		if fr.lent != nil || fr.p != nil {
			t.Error("the reader holds a buffer while it waits for output")
		}
		if idles == 1 {
			w.Write([]byte("hi"))
			w.Close()
		}
	})
	p, n, err := fr.ReadPooled(pool, &held, idle)
	if err != nil || string(p[:n]) != "hi" || !held.Load() || cap(p) != 64 {
		t.Fatalf("ReadPooled: %q (cap %d), %v, held %v", p[:n], cap(p), err, held.Load())
	}
	if idles != 1 {
		t.Fatalf("idle called %d times before the first bytes, want 1", idles)
	}
	pool.Put(p)
	held.Store(false)
	if p, n, err := fr.ReadPooled(pool, &held, idle); p != nil || n != 0 || err != io.EOF {
		t.Fatalf("after the write end closed: %v, %d, %v", p, n, err)
	}
}

// TestMasterPooled: a terminal's output read through ReadPooled, then io.EOF once the
// slave is closed.
func TestMasterPooled(t *testing.T) {
	m, slave, err := Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pool := NewBufferPool(4096)
	var held atomic.Bool
	if _, err := slave.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var got []byte
	for {
		p, n, err := m.ReadPooled(pool, &held, nil)
		got = append(got, p[:n]...)
		pool.Put(p)
		held.Store(false)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(got) != "hello" {
		t.Fatalf("read %q, want %q", got, "hello")
	}
}

// TestBufferPoolNoAllocs: lending a buffer and taking it back allocate nothing once the
// pool holds one.
func TestBufferPoolNoAllocs(t *testing.T) {
	pool := NewBufferPool(4096)
	pool.Put(pool.get())
	if n := testing.AllocsPerRun(100, func() { pool.Put(pool.get()) }); n != 0 {
		t.Fatalf("%v allocations per get and Put, want 0", n)
	}
}
