package truncate

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// texts returns inputs around the buffer sizes of budget: inside the head,
// between head and tail, and far beyond both.
func texts(t testing.TB, budget int) []string {
	ss := samples(t)
	names := make([]string, 0, len(ss))
	for name := range ss {
		names = append(names, name)
	}
	slices.Sort(names)
	all := strings.Repeat(strings.Join(mapValuesOf(ss, names), ""), 1+budget*40/250000)
	side := NewCollector(budget).headMax
	return []string{all[:side/2], all[:side*3/2], all[:min(len(all), side*7)], all}
}

func mapValuesOf(m map[string]string, keys []string) []string {
	var v []string
	for _, k := range keys {
		v = append(v, m[k])
	}
	return v
}

// writeChunks writes s to c in random chunks whose raw ranges are the text's
// own offsets, and returns the chunk boundaries.
func writeChunks(c *Collector, s string, r *rand.Rand, maxChunk int) []int64 {
	bounds := []int64{0}
	for off := 0; off < len(s); {
		n := min(len(s)-off, 1+r.IntN(maxChunk))
		c.Write([]byte(s[off:off+n]), int64(off), int64(off+n))
		off += n
		bounds = append(bounds, int64(off))
	}
	return bounds
}

func TestCollectorMatchesMiddle(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, budget := range []int{1, 30, 300, 3000} {
		for _, s := range texts(t, budget) {
			want := Middle(s, budget)
			for _, maxChunk := range []int{1, 100, 5000, 100000} {
				if maxChunk == 1 && len(s) > 200000 {
					continue
				}
				c := NewCollector(budget)
				bounds := writeChunks(c, s, r, maxChunk)
				got := c.Result()
				if c.Len() != int64(len(s)) {
					t.Fatalf("Len = %d, want %d", c.Len(), len(s))
				}
				if got.Text != want.Text || got.Truncated != want.Truncated || got.OriginalTokens != want.OriginalTokens {
					t.Fatalf("budget %d, %d bytes in chunks of up to %d: Collector %+v\nMiddle %+v",
						budget, len(s), maxChunk, short(got), short(want))
				}
				if !want.Truncated {
					continue
				}
				// Widened to whole chunks, never narrower than the cut.
				_, okFrom := slices.BinarySearch(bounds, got.CutFrom)
				_, okTo := slices.BinarySearch(bounds, got.CutTo)
				if got.CutFrom > want.CutFrom || got.CutTo < want.CutTo || !okFrom || !okTo {
					t.Fatalf("budget %d, chunks of up to %d: cut [%d, %d), Middle's [%d, %d)",
						budget, maxChunk, got.CutFrom, got.CutTo, want.CutFrom, want.CutTo)
				}
				// With few chunks, tags are not merged: the widening is
				// one chunk at most on each side.
				if len(bounds) < minTags {
					i, _ := slices.BinarySearch(bounds, got.CutFrom)
					j, _ := slices.BinarySearch(bounds, got.CutTo)
					if bounds[i+1] <= want.CutFrom || bounds[j-1] >= want.CutTo {
						t.Fatalf("budget %d: cut [%d, %d) is wider than the chunks of Middle's [%d, %d)",
							budget, got.CutFrom, got.CutTo, want.CutFrom, want.CutTo)
					}
				}
			}
		}
	}
}

func short(r Result) Result {
	if len(r.Text) > 200 {
		r.Text = r.Text[:100] + "…" + r.Text[len(r.Text)-100:]
	}
	return r
}

// Raw bytes that produced no text (escape sequences), and chunks of any
// size: every raw byte outside [CutFrom, CutTo) whose text was cut is a
// bug, and the text of the raw range, spliced between the shown head and
// tail, gives back the original.
func TestCollectorRawRange(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	s := texts(t, 300)[2]
	type chunk struct{ text, textEnd, raw, rawEnd int64 }
	for _, maxChunk := range []int{3, 200, 6000} {
		for _, budget := range []int{20, 300} {
			c := NewCollector(budget)
			var chunks []chunk
			var raw int64 = 1000 // raw offsets need not start at 0
			for off := 0; off < len(s); {
				n := min(len(s)-off, r.IntN(maxChunk)) // may be 0: escapes only
				w := int64(n + r.IntN(3)*r.IntN(20))   // raw bytes, more than text
				c.Write([]byte(s[off:off+n]), raw, raw+w)
				chunks = append(chunks, chunk{int64(off), int64(off + n), raw, raw + w})
				off, raw = off+n, raw+w
			}
			got, want := c.Result(), Middle(s, budget)
			if got.Text != want.Text || !got.Truncated {
				t.Fatalf("budget %d: Collector and Middle differ", budget)
			}
			head, tail := s[:want.CutFrom], s[want.CutTo:]
			var cutText strings.Builder
			first, last := int64(-1), int64(-1)
			for _, ch := range chunks {
				cut := ch.text < want.CutTo && ch.textEnd > want.CutFrom
				inside := ch.raw >= got.CutFrom && ch.rawEnd <= got.CutTo
				if cut && !inside {
					t.Fatalf("budget %d, chunks up to %d: chunk %+v lost text outside the raw cut [%d, %d)",
						budget, maxChunk, ch, got.CutFrom, got.CutTo)
				}
				if inside && ch.textEnd > ch.text { // what read_output of the range gives
					if first < 0 {
						first = ch.text
					}
					last = ch.textEnd
					cutText.WriteString(s[ch.text:ch.textEnd])
				}
			}
			if rebuilt := head[:first] + cutText.String() + tail[last-want.CutTo:]; rebuilt != s {
				t.Fatalf("budget %d: head + text of [%d, %d) + tail is not the original", budget, got.CutFrom, got.CutTo)
			}
		}
	}
}

func TestCollectorResultRepeats(t *testing.T) {
	s := texts(t, 100)[3]
	c := NewCollector(100)
	c.Write([]byte(s[:len(s)/2]), 0, int64(len(s)/2))
	if a, b := c.Result(), c.Result(); a != b {
		t.Fatal("two Results differ")
	}
	c.Write([]byte(s[len(s)/2:]), int64(len(s)/2), int64(len(s)))
	if got, want := c.Result(), Middle(s, 100); got.Text != want.Text || got.OriginalTokens != want.OriginalTokens {
		t.Fatalf("after more writes: %+v, want %+v", short(got), short(want))
	}
}

// Edge case 41: memory is bounded by the budget, not by the stream.
func TestCollectorMemory(t *testing.T) {
	const budget = DefaultBudget
	chunk := []byte(strings.Repeat(texts(t, budget)[3], 1)[:4096])
	stream := func(bytes int) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := NewCollector(budget)
		for off := 0; off < bytes; off += len(chunk) {
			c.Write(chunk, int64(off), int64(off+len(chunk)))
		}
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(c)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := stream(1<<20), stream(64<<20)
	side := NewCollector(budget).headMax
	t.Logf("allocated %d bytes for 1 MiB, %d for 64 MiB (head and tail buffers: %d each)", small, large, side)
	if large > small+64<<10 || large > uint64(8*side) {
		t.Errorf("a 64 MiB stream allocated %d bytes, 1 MiB %d: want O(budget), at most %d", large, small, 8*side)
	}
}

// BenchmarkCollector streams 256 MiB of varied text in 4 KiB chunks (edge
// case 41: 1 GiB must pass at well above 200 MB/s) and reports the bytes
// allocated and the heap it holds at the end of the stream. BenchmarkResult
// times the Result that follows.
func BenchmarkCollector(b *testing.B) {
	const total = 256 << 20
	src := []byte(texts(b, DefaultBudget)[3])
	src = src[:len(src)/4096*4096]
	var alloc, heap uint64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := NewCollector(DefaultBudget)
		for off := 0; off < total; off += 4096 {
			at := off % len(src)
			c.Write(src[at:at+4096], int64(off), int64(off+4096))
		}
		runtime.ReadMemStats(&after)
		alloc += after.TotalAlloc - before.TotalAlloc
		heap = max(heap, after.HeapAlloc-before.HeapAlloc)
	}
	b.SetBytes(total)
	b.ReportMetric(float64(alloc)/float64(b.N), "alloc-B/op")
	b.ReportMetric(float64(heap), "heap-B")
}

func BenchmarkResult(b *testing.B) {
	for _, budget := range []int{DefaultBudget, MaxBudget} {
		b.Run(strconv.Itoa(budget), func(b *testing.B) {
			c := NewCollector(budget)
			s := strings.Repeat(texts(b, budget)[3], 4)
			c.Write([]byte(s), 0, int64(len(s)))
			for b.Loop() {
				c.Result()
			}
		})
	}
}

// skipStream writes numbered lines into c (n of them, or until it overflows when n is 0),
// hands 20,000 more over raw (SkipRaw), then writes a last line. It returns the skipped
// bytes, where they start, and the stream's end.
func skipStream(c *Collector, n int) (mid []byte, skipFrom, end int64) {
	line := func(i int) []byte { return []byte(fmt.Sprintf("line %06d of the stream\n", i)) }
	var off int64
	i := 0
	for ; n > 0 && i < n || n == 0 && !c.Overflowing(); i++ {
		l := line(i)
		c.Write(l, off, off+int64(len(l)))
		off += int64(len(l))
	}
	for j := 0; j < 20000; j++ {
		mid = append(mid, line(i+j)...)
	}
	skipFrom = off
	c.SkipRaw(mid, off, off+int64(len(mid)))
	off += int64(len(mid))
	tail := []byte("the very last line\n")
	c.Write(tail, off, off+int64(len(tail)))
	return mid, skipFrom, off
}

// TestCollectorSkipRaw: a stream whose middle is handed over raw keeps its head and the
// text written after the skip as tail, cuts the range that covers the skipped bytes, and
// estimates their tokens.
func TestCollectorSkipRaw(t *testing.T) {
	c := NewCollector(1000)
	mid, skipFrom, off := skipStream(c, 0)
	r := c.Result()
	if !r.Truncated || !strings.HasPrefix(r.Text, "line 000000 ") || !strings.HasSuffix(r.Text, "the very last line\n") {
		t.Fatalf("result: truncated %v, %q…%q", r.Truncated, r.Text[:40], r.Text[len(r.Text)-40:])
	}
	if r.CutFrom > skipFrom || r.CutTo < off {
		t.Errorf("cut range [%d,%d) does not cover the skipped bytes [%d,%d)", r.CutFrom, r.CutTo, skipFrom, off)
	}
	if exact := Count(string(mid)); r.OriginalTokens < exact/2 || r.OriginalTokens > 3*exact {
		t.Errorf("original tokens %d, the skipped part alone has %d", r.OriginalTokens, exact)
	}
}

// TestCollectorCountedElsewhere: a collector whose caller counts the original tokens
// skips the middle's estimate, and gives the same result once SetOriginal sets the count.
func TestCollectorCountedElsewhere(t *testing.T) {
	run := func(counted bool) Result {
		c := NewCollector(1000)
		if counted {
			c.CountedElsewhere()
		}
		skipStream(c, 3000) // through the ring first: text is evicted to the middle
		r := c.Result()
		r.SetOriginal(123456)
		return r
	}
	plain, counted := run(false), run(true)
	if !plain.Truncated || plain.Text != counted.Text || plain.OriginalTokens != counted.OriginalTokens ||
		plain.CutFrom != counted.CutFrom || plain.CutTo != counted.CutTo {
		t.Fatalf("results differ:\n%+v\n%+v", plain, counted)
	}
	if !strings.Contains(counted.Text, "…") || counted.OriginalTokens != 123456 {
		t.Fatalf("marker or count not set: %d tokens", counted.OriginalTokens)
	}
}
