package transcript

import (
	"bytes"
	"testing"
	"time"
)

// BenchmarkOutput measures the writer on typical terminal output in 4 KiB pty-sized
// chunks, spill included: the rate the recorder sustains (it must exceed the reader's).
func BenchmarkOutput(b *testing.B) {
	w, err := Create(b.TempDir(), "bench", Header{Width: 80, Height: 24}, time.Now(), Options{Spill: true, Cap: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Release()
	chunk := bytes.Repeat([]byte("12345 some output \x1b[1mbold\x1b[0m é\r\n"), 4096/36)
	b.SetBytes(int64(len(chunk)))
	now := time.Now()
	var off int64
	for b.Loop() {
		w.Output(now, off, chunk)
		off += int64(len(chunk))
	}
	w.Close(now, "done")
}

// BenchmarkReadAt measures reading recorded output back (read_output of offsets that
// left the ring): 32 KiB at a time, in order, from 16 MiB of text recorded in 64 KiB
// chunks.
func BenchmarkReadAt(b *testing.B) {
	w, err := Create(b.TempDir(), "bench", Header{Width: 80, Height: 24}, time.Now(), Options{Spill: true, Cap: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Release()
	out := bytes.Repeat([]byte("12345 some output \x1b[1mbold\x1b[0m é\r\n"), 16<<20/36)
	now := time.Now()
	for off := 0; off < len(out); off += 64 << 10 {
		w.Output(now, int64(off), out[off:min(off+64<<10, len(out))])
	}
	w.Flush()
	p := make([]byte, 32<<10)
	b.SetBytes(int64(len(p)))
	var off int64
	for b.Loop() {
		if off+int64(len(p)) > int64(len(out)) {
			off = 0
		}
		n := 0
		for n < len(p) {
			k := w.ReadAt(p[n:], off+int64(n))
			if k == 0 {
				b.Fatalf("ReadAt(%d) read nothing", off+int64(n))
			}
			n += k
		}
		off += int64(n)
	}
}

// BenchmarkOutputUTF8 measures the writer on non-ASCII text in 64 KiB chunks (as the
// recorder reads a flood), which end inside a character more often than not.
func BenchmarkOutputUTF8(b *testing.B) {
	w, err := Create(b.TempDir(), "bench", Header{Width: 80, Height: 24}, time.Now(), Options{Spill: true, Cap: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Release()
	text := bytes.Repeat([]byte("é€ 日本語 ok\r\n"), 1<<20/19)
	b.SetBytes(64 << 10)
	now := time.Now()
	var off int64
	for b.Loop() {
		i := int(off % int64(len(text)-64<<10))
		w.Output(now, off, text[i:i+64<<10])
		off += 64 << 10
	}
	w.Close(now, "done")
}
