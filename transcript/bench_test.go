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
