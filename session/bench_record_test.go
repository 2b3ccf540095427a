package session

import (
	"bytes"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/transcript"
)

// BenchmarkRecorderFlood measures the recorder's own work per byte of a flood
// (head -c N /dev/zero | tr '\0' a: no newline) in the 64 KiB pieces it copies from the
// ring, as run does per round: the .cast's output event (its JSON escaping and write),
// then the text log (the digest, the text view, its file), both with the default cap
// (256 MiB), so a run of 16384 iterations is the recorder's work in a 1 GiB flood: a
// quarter of it written to both files, all of it digested and converted. The ring's
// copy and the goroutine's wakes are not in it. Run:
// go test -run '^$' -bench RecorderFlood -benchtime 16384x ./session
func BenchmarkRecorderFlood(b *testing.B) {
	dir := b.TempDir()
	now := time.Now()
	w, err := transcript.Create(dir, "bench", transcript.Header{Width: 80, Height: 24}, now, transcript.Options{Spill: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Release()
	tl := newTextLog(dir, "bench", 0)
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	var off int64
	for b.Loop() {
		w.Output(now, off, chunk)
		tl.output(chunk)
		off += int64(len(chunk))
		if off%(256<<10) == 0 { // a round (a batch of the hub) ends
			w.Flush()
		}
	}
	w.Close(now, "done")
	tl.close()
	if tl.failed || w.Err() != nil {
		b.Fatalf("the log or the transcript failed: %v", w.Err())
	}
}
