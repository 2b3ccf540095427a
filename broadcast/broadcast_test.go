package broadcast

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stream returns n bytes of a fixed pseudo-random stream; byte i of every
// call with n > i is the same, so a reader can check data by its offset.
func stream(n int) []byte { return bigStream()[:n] }

var bigStream = sync.OnceValue(func() []byte {
	b := make([]byte, 64<<20)
	rand.NewChaCha8([32]byte{'p', 't', 'y', 'h', 'u', 'b'}).Read(b)
	return b
})

// drain reads c until it finds nothing new, checking every byte against want
// and every missed count against the hub's Start. It returns bytes read and
// missed.
func drain(t *testing.T, h *Hub, c *cursor, want []byte, buf []byte) (read, missed int64) {
	t.Helper()
	for {
		off, start := c.Offset(), h.Start()
		n, m, err := c.Read(buf)
		if err != nil && err != io.EOF {
			t.Fatalf("Read at %d: %v", off, err)
		}
		if wantM := max(0, start-off); m != wantM {
			t.Fatalf("Read at %d (Start %d): missed %d, want %d", off, start, m, wantM)
		}
		got := off + m
		if !bytes.Equal(buf[:n], want[got:got+int64(n)]) {
			t.Fatalf("Read at %d: wrong bytes at %d..%d", off, got, got+int64(n))
		}
		read, missed = read+int64(n), missed+m
		if n == 0 {
			return read, missed
		}
	}
}

func TestWrapAround(t *testing.T) {
	t.Parallel()
	retains := []int{1, 2, 3, 7, 64, 4095, 4096, 4097, 5000, 3 << 12, 1 << 16}
	for _, retain := range retains {
		chunks := map[string]func(r *rand.Rand) int{
			"1":           func(*rand.Rand) int { return 1 },
			"3":           func(*rand.Rand) int { return 3 },
			"retain-1":    func(*rand.Rand) int { return max(1, retain-1) },
			"retain":      func(*rand.Rand) int { return retain },
			"retain+1":    func(*rand.Rand) int { return retain + 1 },
			"2*retain+5":  func(*rand.Rand) int { return 2*retain + 5 },
			"random":      func(r *rand.Rand) int { return 1 + r.IntN(3*retain) },
			"random-tiny": func(r *rand.Rand) int { return r.IntN(5) },
		}
		for name, chunk := range chunks {
			t.Run(fmt.Sprintf("retain=%d/chunk=%s", retain, name), func(t *testing.T) {
				t.Parallel()
				total := 3*retain + 9000
				if name == "1" || name == "3" || name == "random-tiny" {
					total = min(total, 3*retain+100) // keep byte-at-a-time cases quick
				}
				want := stream(total + 3*retain + 5)
				r := rand.New(rand.NewPCG(uint64(retain), 1))
				h := New(retain)
				every := newCursor(h, 0)   // reads after every write: never misses
				lagging := newCursor(h, 0) // reads after every third write
				var end, lagRead, lagMissed int64
				buf := make([]byte, 2*retain+1000)
				for w := 1; end < int64(total); w++ {
					k := chunk(r)
					n, err := h.Write(want[end : end+int64(k)])
					if n != k || err != nil {
						t.Fatalf("Write(%d bytes) = %d, %v", k, n, err)
					}
					end += int64(k)
					if h.End() != end || h.Start() != max(0, end-int64(retain)) {
						t.Fatalf("after %d bytes: Start, End = %d, %d; want %d, %d",
							end, h.Start(), h.End(), max(0, end-int64(retain)), end)
					}
					if w&(w-1) == 0 { // the whole window, at power-of-two writes
						full, from := h.Tail(retain + 1)
						if from != h.Start() || !bytes.Equal(full, want[from:end]) {
							t.Fatalf("Tail: %d bytes from %d, want window %d..%d", len(full), from, h.Start(), end)
						}
					}
					if _, m := drain(t, h, every, want, buf[:1000]); m != 0 && k <= retain {
						t.Fatalf("cursor reading every write missed %d bytes", m)
					}
					if w%3 == 0 {
						rd, m := drain(t, h, lagging, want, buf[:1+r.IntN(2*retain)])
						lagRead, lagMissed = lagRead+rd, lagMissed+m
					}
				}
				rd, m := drain(t, h, lagging, want, buf[:retain])
				if lagRead+rd+lagMissed+m != end {
					t.Fatalf("lagging cursor: read %d + missed %d != End %d", lagRead+rd, lagMissed+m, end)
				}
			})
		}
	}
}

func TestGrowth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		retain int
		writes []int // sizes written in turn
		sizes  []int // len(h.buf) after each write
	}{
		// A ring that must hold more than retain takes its full size, retain+ReserveMax.
		{DefaultRetain, []int{1, 4095, 1, 1 << 20, 8 << 20, 1}, []int{4096, 4096, 8192, 2 << 20, 4 << 20, 4<<20 + ReserveMax}},
		{5000, []int{4096, 1, 10}, []int{4096, 5000, 5000}},
		{3 << 12, []int{5000, 5000}, []int{8192, 3 << 12}},
		{100, []int{1}, []int{100}},
		{1 << 16, []int{1 << 20}, []int{1 << 16}}, // chunk > retain goes straight to retain
		{1 << 16, []int{0}, []int{0}},             // nothing written, nothing allocated
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.retain, tt.writes), func(t *testing.T) {
			t.Parallel()
			h := New(tt.retain)
			if len(h.buf) != 0 {
				t.Fatalf("New allocated %d bytes", len(h.buf))
			}
			want := stream(64 << 20)
			var end int
			for i, k := range tt.writes {
				h.Write(want[end : end+k])
				end += k
				if len(h.buf) != tt.sizes[i] {
					t.Fatalf("after writing %d bytes: ring is %d bytes, want %d", end, len(h.buf), tt.sizes[i])
				}
				start := max(0, end-tt.retain)
				got, from := h.Tail(end)
				if from != int64(start) || !bytes.Equal(got, want[start:end]) {
					t.Fatalf("after growth: Tail is %d bytes from %d, want %d..%d", len(got), from, start, end)
				}
			}
		})
	}
}

func TestReadAt(t *testing.T) {
	t.Parallel()
	// retain 8, "0123456789abcdef" written: Start 8, End 16.
	tests := []struct {
		name    string
		closed  bool
		off     int64
		size    int
		want    string
		missed  int64
		wantErr error
	}{
		{"at Start", false, 8, 4, "89ab", 0, nil},
		{"inside", false, 13, 10, "def", 0, nil},
		{"before Start", false, 0, 4, "89ab", 8, nil},
		{"before Start, all", false, 3, 100, "89abcdef", 5, nil},
		{"empty p before Start", false, 3, 0, "", 5, nil},
		{"last byte", false, 15, 4, "f", 0, nil},
		{"at End", false, 16, 4, "", 0, nil},
		{"at End closed", true, 16, 4, "", 0, io.EOF},
		{"last byte closed", true, 15, 4, "f", 0, nil},
		{"before Start closed", true, 1, 100, "89abcdef", 7, nil},
		{"beyond End", false, 17, 4, "", 0, ErrOffset},
		{"beyond End closed", true, 17, 4, "", 0, ErrOffset},
		{"negative", false, -1, 4, "", 0, ErrOffset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := New(8)
			h.Write([]byte("0123"))
			h.Write([]byte("456789abcdef"))
			if tt.closed {
				h.Close()
			}
			p := make([]byte, tt.size)
			n, missed, err := h.ReadAt(p, tt.off)
			if string(p[:n]) != tt.want || missed != tt.missed || !errors.Is(err, tt.wantErr) {
				t.Errorf("ReadAt(%d bytes, %d) = %q, %d, %v; want %q, %d, %v",
					tt.size, tt.off, p[:n], missed, err, tt.want, tt.missed, tt.wantErr)
			}
		})
	}
}

func TestEmptyHub(t *testing.T) {
	t.Parallel()
	h := New(0)
	if h.retain != DefaultRetain {
		t.Errorf("New(0) retains %d, want %d", h.retain, DefaultRetain)
	}
	if n, m, err := h.ReadAt(make([]byte, 8), 0); n != 0 || m != 0 || err != nil {
		t.Errorf("open empty hub: ReadAt = %d, %d, %v; want 0, 0, nil", n, m, err)
	}
	if data, from := h.Tail(10); len(data) != 0 || from != 0 {
		t.Errorf("Tail of empty hub = %q, %d", data, from)
	}
	h.Close()
	if n, m, err := h.ReadAt(make([]byte, 8), 0); n != 0 || m != 0 || err != io.EOF {
		t.Errorf("closed empty hub: ReadAt = %d, %d, %v; want 0, 0, EOF", n, m, err)
	}
}

func TestChunkLargerThanRetain(t *testing.T) {
	t.Parallel()
	h := New(10)
	h.Write([]byte("xyz"))
	c := newCursor(h, 0)
	if n, err := h.Write([]byte("abcdefghijklmnopqrstuvwxy")); n != 25 || err != nil {
		t.Fatalf("Write = %d, %v; want 25, nil", n, err)
	}
	if h.Start() != 18 || h.End() != 28 {
		t.Fatalf("Start, End = %d, %d; want 18, 28", h.Start(), h.End())
	}
	p := make([]byte, 100)
	n, missed, err := c.Read(p)
	if string(p[:n]) != "pqrstuvwxy" || missed != 18 || err != nil {
		t.Fatalf("Read = %q, %d, %v; want \"pqrstuvwxy\", 18, nil", p[:n], missed, err)
	}
	h.Write([]byte("123"))
	if data, from := h.Tail(100); string(data) != "stuvwxy123" || from != 21 {
		t.Fatalf("Tail = %q, %d; want \"stuvwxy123\", 21", data, from)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		close func(*Hub)
	}{
		{"Close", (*Hub).Close},
		{"Close twice", func(h *Hub) { h.Close(); h.Close() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := New(4)
			h.Write([]byte("hello"))
			c := newCursor(h, 0)
			waiting := h.Notify()
			if h.Closed() {
				t.Fatal("Closed before Close")
			}
			tt.close(h)
			if !h.Closed() {
				t.Fatal("not Closed after Close")
			}
			<-waiting // Close wakes waiters
			<-h.Notify()
			if err := waitFor(context.Background(), h, 100); err != nil {
				t.Fatalf("WaitFor on closed hub = %v", err)
			}
			if n, err := h.Write([]byte("more")); n != 0 || err != ErrClosed {
				t.Fatalf("Write after Close = %d, %v; want 0, ErrClosed", n, err)
			}
			if h.End() != 5 {
				t.Fatalf("End = %d after a refused write", h.End())
			}
			p := make([]byte, 10)
			if n, m, err := c.Read(p); string(p[:n]) != "ello" || m != 1 || err != nil {
				t.Fatalf("Read = %q, %d, %v; want held bytes first", p[:n], m, err)
			}
			for range 2 {
				if n, m, err := c.Read(p); n != 0 || m != 0 || err != io.EOF {
					t.Fatalf("Read at end = %d, %d, %v; want 0, 0, EOF", n, m, err)
				}
			}
		})
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestNotify(t *testing.T) {
	t.Parallel()
	h := New(16)
	if h.notify != nil {
		t.Fatal("notify channel allocated before anyone asked")
	}
	h.Write([]byte("a"))
	ch := h.Notify()
	if isClosed(ch) {
		t.Fatal("Notify channel closed before any write")
	}
	if ch2 := h.Notify(); ch2 != ch {
		t.Fatal("second Notify without a write in between returned another channel")
	}
	h.Write(nil)
	if isClosed(ch) {
		t.Fatal("empty Write woke waiters")
	}
	h.Write([]byte("b"))
	if !isClosed(ch) {
		t.Fatal("Write did not close the Notify channel")
	}
	if h.notify != nil {
		t.Fatal("Write left a channel behind")
	}
	ch = h.Notify()
	if isClosed(ch) {
		t.Fatal("Notify after a write returned a closed channel")
	}

	// A waiter in another goroutine, woken by a write there.
	got := make(chan string)
	c := newCursor(h, h.End())
	go func() { // ends once it has read the next write
		wake := h.Notify()
		p := make([]byte, 8)
		for {
			if n, _, _ := c.Read(p); n > 0 {
				got <- string(p[:n])
				return
			}
			<-wake
			wake = h.Notify()
		}
	}()
	go h.Write([]byte("c"))
	if s := <-got; s != "c" {
		t.Fatalf("waiter read %q, want \"c\"", s)
	}
	h.Close()
	if !isClosed(ch) {
		t.Fatal("Close did not close the Notify channel")
	}
}

func TestWaitFor(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		off    int64
		action func(h *Hub, cancel func()) // run concurrently with WaitFor
		want   error
	}{
		{"byte already there", context.Background(), 2, nil, nil},
		{"byte there, ctx done", canceled, 0, nil, nil},
		{"write", context.Background(), 3, func(h *Hub, _ func()) { h.Write([]byte("d")) }, nil},
		{"write past off", context.Background(), 10, func(h *Hub, _ func()) {
			for range 10 {
				h.Write([]byte("x"))
			}
		}, nil},
		{"close", context.Background(), 3, func(h *Hub, _ func()) { h.Close() }, nil},
		{"cancel", context.Background(), 3, func(_ *Hub, cancel func()) { cancel() }, context.Canceled},
		{"canceled", canceled, 3, nil, context.Canceled},
		{"deadline", expired, 3, nil, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := New(4)
			h.Write([]byte("abc"))
			ctx, cancel := context.WithCancel(tt.ctx)
			defer cancel()
			if tt.action != nil {
				go tt.action(h, cancel)
			}
			if err := waitFor(ctx, h, tt.off); err != tt.want {
				t.Fatalf("WaitFor = %v, want %v", err, tt.want)
			}
			if tt.want == nil && h.End() <= tt.off && !h.Closed() {
				t.Fatalf("WaitFor returned with End %d <= %d on an open hub", h.End(), tt.off)
			}
		})
	}
}

// TestConcurrent pushes 64 MiB of a known stream in random chunk sizes
// through a 64 KiB ring while readers of every pace check each byte at its
// offset and that read + missed adds up to the whole stream. The producer
// either floods (readers miss most of it) or yields after every write, so
// that fast readers also follow the ring around for long stretches.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	for _, producer := range []string{"flood", "yielding"} {
		t.Run(producer, func(t *testing.T) {
			t.Parallel()
			testConcurrent(t, producer == "yielding")
		})
	}
}

func testConcurrent(t *testing.T, yielding bool) {
	const total, retain = 64 << 20, 64 << 10
	want := stream(total)
	h := New(retain)
	produced := make(chan struct{})

	type reader struct {
		name  string
		buf   int
		pace  func()     // called after every read
		start func() int // offset to start at
	}
	fromZero := func() int { return 0 }
	readers := []reader{
		{"fast", 1 << 20, func() {}, fromZero},
		{"fast-small", 4 << 10, func() {}, fromZero},
		{"slow", 512, runtime.Gosched, fromZero},
		{"tiny", 7, func() {}, fromZero},
		{"stalled", 1 << 10, func() { <-produced }, fromZero},
		{"late", 32 << 10, func() {}, func() int { <-produced; return int(h.End()) - 10 }},
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, rd := range readers {
		wg.Go(func() { // ends at io.EOF (h.Close is deferred below) or the first failure
			start := rd.start()
			c := newCursor(h, int64(start))
			buf := make([]byte, rd.buf)
			var read, missed int64
			for {
				off := c.Offset()
				n, m, err := c.Read(buf)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Errorf("%s: Read at %d: %v", rd.name, off, err)
					return
				}
				got := off + m
				if !bytes.Equal(buf[:n], want[got:got+int64(n)]) {
					t.Errorf("%s: wrong bytes at %d..%d", rd.name, got, got+int64(n))
					return
				}
				read, missed = read+int64(n), missed+m
				if n == 0 {
					if err := waitFor(context.Background(), h, c.Offset()); err != nil {
						t.Errorf("%s: WaitFor: %v", rd.name, err)
						return
					}
				}
				rd.pace()
			}
			if int64(start)+read+missed != total {
				t.Errorf("%s: start %d + read %d + missed %d != %d", rd.name, start, read, missed, total)
			}
			if rd.name == "stalled" && missed == 0 {
				t.Errorf("stalled reader missed nothing of %d bytes through a %d-byte ring", total, retain)
			}
			t.Logf("%-10s read %9d missed %9d", rd.name, read, missed)
		})
	}
	defer h.Close()
	defer close(produced)

	// The producer: random chunk sizes, now and then one larger than retain.
	r := rand.New(rand.NewPCG(7, 7))
	for off := 0; off < total; {
		k := 1 + r.IntN(16<<10)
		if r.IntN(100) == 0 {
			k = retain + r.IntN(retain)
		}
		k = min(k, total-off)
		if n, err := h.Write(want[off : off+k]); n != k || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		off += k
		if yielding {
			runtime.Gosched()
		}
	}
}

// TestIdleReaderDoesNotBlockProducer: readers that never read, and waiters
// nobody serves, must not hold up the producer. The test
// passes by finishing.
func TestIdleReaderDoesNotBlockProducer(t *testing.T) {
	t.Parallel()
	const total, retain = 16 << 20, 64 << 10
	h := New(retain)
	idle := newCursor(h, 0)
	_ = h.Notify() // a channel nobody receives from
	waited := make(chan error)
	go func() { waited <- waitFor(context.Background(), h, 1<<62) }() // ends at Close

	chunk := stream(4 << 10)
	for range total / len(chunk) {
		h.Write(chunk)
	}
	h.Close()
	if err := <-waited; err != nil {
		t.Fatalf("WaitFor = %v", err)
	}
	read, missed := drain(t, h, idle, bytes.Repeat(chunk, total/len(chunk)), make([]byte, 1<<20))
	if read != retain || missed != total-retain {
		t.Fatalf("idle cursor: read %d, missed %d; want %d, %d", read, missed, retain, total-retain)
	}
}

// BenchmarkWrite measures the producer's cost per 4 KiB chunk into a 4 MiB
// ring: alone, with 4 readers following as fast as they can, and with 4
// waiters that are woken by every write but never read. floor=copy is a bare
// copy of the chunk into a ring-sized buffer, the floor to compare with.
func BenchmarkWrite(b *testing.B) {
	chunk := stream(4 << 10)
	b.Run("floor=copy", func(b *testing.B) {
		ring := make([]byte, DefaultRetain)
		b.SetBytes(int64(len(chunk)))
		var off int
		for b.Loop() {
			copy(ring[off:], chunk)
			off = (off + len(chunk)) % len(ring)
		}
	})
	for _, bm := range []struct {
		name             string
		readers, waiters int
	}{
		{"subscribers=0", 0, 0},
		{"subscribers=4", 4, 0},
		{"waiters=4", 0, 4},
	} {
		b.Run(bm.name, func(b *testing.B) {
			h := New(DefaultRetain)
			var wg sync.WaitGroup
			for range bm.readers {
				wg.Go(func() { // ends at io.EOF after h.Close
					c := newCursor(h, 0)
					buf := make([]byte, 64<<10)
					for {
						n, _, err := c.Read(buf)
						if err != nil {
							return
						}
						if n == 0 {
							waitFor(context.Background(), h, c.Offset())
						}
					}
				})
			}
			for range bm.waiters {
				wg.Go(func() { waitFor(context.Background(), h, 1<<62) }) // ends at Close
			}
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			for b.Loop() {
				h.Write(chunk)
			}
			b.StopTimer()
			h.Close()
			wg.Wait()
		})
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestNotifyBatch(t *testing.T) {
	h := New(64 << 20)
	const b = BatchSize
	ch := h.NotifyBatch(0) // the boundary is b: at least half a batch beyond 0
	h.Write(make([]byte, b-1))
	if closed(ch) {
		t.Fatal("woken before End reached the boundary")
	}
	h.Write([]byte{0})
	if !closed(ch) {
		t.Fatal("not woken when End reached the boundary")
	}
	// Past the middle of a batch, the boundary is the one after next.
	if c := h.NotifyBatch(b + b/2); c == closedChan {
		t.Fatal("a boundary not reached is closed")
	}
	// Readers of the same stretch share one channel, so one Write wakes them together.
	if h.NotifyBatch(b+b/2) != h.NotifyBatch(b+b/2+10) {
		t.Error("waiters on one boundary do not share a channel")
	}
	if c := h.NotifyBatch(0); c != closedChan {
		t.Error("a boundary already passed is not closed at once")
	}
	// Flush wakes every waiter, whatever its boundary.
	a, c := h.NotifyBatch(b), h.NotifyBatch(10*b)
	h.Flush()
	if !closed(a) || !closed(c) {
		t.Fatal("Flush did not wake every batch waiter")
	}
	h.Flush() // nobody waits: nothing to do
	late := h.NotifyBatch(100 * b)
	h.Close()
	if !closed(late) {
		t.Fatal("Close did not wake a batch waiter")
	}
}

// TestNotifyBatchSmallRing: a batch is at most an eighth of the ring, so a reader woken at
// its boundary still finds the batch in memory.
// TestNotifyBoundaryIgnoresFlush: a NotifyBoundary waiter is woken when End reaches its
// boundary, at Close, and when a Write of a held stream must wait for room, but not by
// Flush, which still wakes the NotifyBatch waiters of the same boundary (on a channel of
// their own) and finds nobody to wake once only boundary waiters are left.
func TestNotifyBoundaryIgnoresFlush(t *testing.T) {
	h := New(64 << 20)
	const b = BatchSize
	nb, bt := h.NotifyBoundary(0), h.NotifyBatch(0)
	if nb == bt {
		t.Fatal("a boundary waiter shares the channel of a batch waiter")
	}
	h.Write(make([]byte, 10))
	h.Flush()
	if !closed(bt) {
		t.Fatal("Flush did not wake the batch waiter")
	}
	if closed(nb) {
		t.Fatal("Flush woke a boundary waiter")
	}
	if n := h.nat.Load(); n != 0 {
		t.Errorf("Flush's count of waiters to wake is %d with only a boundary waiter left, want 0", n)
	}
	if h.NotifyBoundary(5) != nb {
		t.Error("boundary waiters on one stretch do not share a channel")
	}
	h.Write(make([]byte, b-11))
	if closed(nb) {
		t.Fatal("woken before End reached the boundary")
	}
	h.Write([]byte{0})
	if !closed(nb) {
		t.Fatal("not woken when End reached the boundary")
	}
	if c := h.NotifyBoundary(0); c != closedChan {
		t.Error("a boundary already passed is not closed at once")
	}
	late := h.NotifyBoundary(100 * b)
	h.Close()
	if !closed(late) {
		t.Fatal("Close did not wake a boundary waiter")
	}

	// A held Write that must wait for room wakes it: the holder may be waiting for the
	// boundary that Write would cross.
	h = New(64 << 10) // batch 8 KiB
	h.Hold(0)
	h.Write(make([]byte, 60<<10))
	held := h.NotifyBoundary(60 << 10)
	done := make(chan struct{})
	go func() { // the producer: owned by the test, ends when the hold is released
		defer close(done)
		h.Write(make([]byte, 8<<10))
	}()
	<-held // the Write waits for room: it wakes the boundary waiter first
	h.Release(h.End())
	<-done
}

func TestNotifyBatchSmallRing(t *testing.T) {
	h := New(64)
	ch := h.NotifyBatch(0) // batch 8: boundary 8
	h.Write(make([]byte, 7))
	if closed(ch) {
		t.Fatal("woken before End reached the boundary")
	}
	h.Write([]byte{1})
	if !closed(ch) {
		t.Fatal("not woken at the boundary of a small ring's batch")
	}
}

// produceRandom writes n random bytes into h (from src) in writes of 1 to 3×retain
// bytes, some larger than the ring, on a goroutine owned by the test that ends with
// h.Close, and returns the bytes it writes.
func produceRandom(t *testing.T, h *Hub, n, retain int, src rand.Source) []byte {
	want := make([]byte, n)
	rng := rand.New(src)
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	go func() {
		for p := want; len(p) > 0; {
			k := min(len(p), 1+rng.IntN(3*retain))
			if _, err := h.Write(p[:k]); err != nil {
				t.Errorf("write: %v", err)
				return
			}
			p = p[k:]
		}
		h.Close()
	}()
	return want
}

// TestHoldLosesNothing: a holder that reads slowly, in small pieces, through a ring a
// fraction of the stream's size, gets every byte in order and misses none, while an
// ordinary reader that never reads is still skipped over, and the producer's writes —
// some larger than the ring — all complete.
func TestHoldLosesNothing(t *testing.T) {
	const retain = 4 << 10
	h := New(retain)
	if err := h.Hold(0); err != nil {
		t.Fatal(err)
	}
	want := produceRandom(t, h, 64*retain, retain, rand.NewPCG(1, 2))
	var got []byte
	buf := make([]byte, 300)
	off := int64(0)
	for {
		ch := h.Notify()
		n, missed, err := h.ReadAt(buf, off)
		if missed != 0 {
			t.Fatalf("holder missed %d bytes at %d", missed, off)
		}
		got = append(got, buf[:n]...)
		off += int64(n)
		h.Release(off)
		if err == io.EOF {
			break
		}
		if n == 0 {
			<-ch
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("holder read %d bytes, not the %d written", len(got), len(want))
	}
	idle := newCursor(h, 0)
	_, missed, _ := idle.Read(buf)
	if missed != int64(len(want))-retain {
		t.Errorf("an ordinary reader missed %d bytes, want %d", missed, len(want)-retain)
	}
}

// TestHeldViewLosesNothing: a holder that reads the ring in place (HeldView), in pieces
// that wrap around its end, while the producer writes a stream many rings long (some
// writes larger than the ring), sees every byte in order, and no byte it looks at
// changes before it releases it (checked by -race and by comparing after the next
// writes went on).
func TestHeldViewLosesNothing(t *testing.T) {
	const retain = 4 << 10
	h := New(retain)
	if err := h.Hold(0); err != nil {
		t.Fatal(err)
	}
	want := produceRandom(t, h, 64*retain, retain, rand.NewPCG(3, 4))
	var got []byte
	off, wrapped := int64(0), 0
	for {
		ch := h.Notify()
		p, q, err := h.HeldView(off, 1000)
		if len(q) > 0 {
			wrapped++
			if len(p) == 0 {
				t.Fatalf("a view at %d has a second part and no first", off)
			}
		}
		n := len(p) + len(q)
		if n > 1000 {
			t.Fatalf("a view of at most 1000 bytes has %d", n)
		}
		got = append(append(got, p...), q...)
		// The bytes looked at stay put while held, whatever the producer does meanwhile.
		runtime.Gosched()
		if !bytes.Equal(append(slices.Clip(p), q...), want[off:off+int64(n)]) {
			t.Fatalf("the view at %d changed before it was released", off)
		}
		off += int64(n)
		h.Release(off)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("HeldView(%d): %v", off, err)
		}
		if n == 0 {
			<-ch
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("holder read %d bytes, not the %d written", len(got), len(want))
	}
	if wrapped == 0 {
		t.Error("no view wrapped around the ring's end: the test did not cover it")
	}
	if _, _, err := h.HeldView(off-1, 10); !errors.Is(err, ErrOffset) {
		t.Errorf("a view below the hold: err %v, want ErrOffset", err)
	}
	h.Unhold()
	if _, _, err := h.HeldView(off, 10); !errors.Is(err, ErrOffset) {
		t.Errorf("a view with no hold: err %v, want ErrOffset", err)
	}
}

// TestUnholdAndCloseFreeAWaitingWrite: a Write waiting for a holder that does not read
// goes on at Unhold, and one waiting at Close returns ErrClosed.
func TestUnholdAndCloseFreeAWaitingWrite(t *testing.T) {
	for _, how := range []string{"unhold", "close"} {
		t.Run(how, func(t *testing.T) {
			h := New(1024)
			h.Hold(0)
			h.Write(make([]byte, 1024))
			done := make(chan error, 1)
			go func() { _, err := h.Write([]byte("x")); done <- err }()
			// The Write cannot complete until the hold is gone: wait until it waits.
			for {
				h.mu.Lock()
				waiting := h.space != nil
				h.mu.Unlock()
				if waiting {
					break
				}
				runtime.Gosched()
			}
			select {
			case err := <-done:
				t.Fatalf("write went on with the ring full and held: %v", err)
			default:
			}
			if how == "unhold" {
				h.Unhold()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if h.End() != 1025 {
					t.Errorf("end %d, want 1025", h.End())
				}
				return
			}
			h.Close()
			if err := <-done; !errors.Is(err, ErrClosed) {
				t.Errorf("write at close: %v, want ErrClosed", err)
			}
		})
	}
}

// cursor is one reader's position in a hub, as each of a session's readers keeps one.
type cursor struct {
	h   *Hub
	off int64
}

func newCursor(h *Hub, off int64) *cursor { return &cursor{h: h, off: off} }

// Offset returns the offset the next Read starts at.
func (c *cursor) Offset() int64 { return c.off }

// Read is ReadAt at the cursor's offset, and advances the cursor past the bytes missed
// and read.
func (c *cursor) Read(p []byte) (n int, missed int64, err error) {
	n, missed, err = c.h.ReadAt(p, c.off)
	c.off += missed + int64(n)
	return n, missed, err
}

// waitFor waits with Notify until End() > off (a byte at off or later can be read), the
// hub is closed, or ctx is done; it returns ctx.Err() in the last case, else nil.
func waitFor(ctx context.Context, h *Hub, off int64) error {
	for {
		ch := h.Notify()
		if h.End() > off || h.Closed() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestHoldWakeStartsTheHolder: a holder that runs only when woken (it reads what there
// is, releases it and ends, as a session's recorder does) gets every byte of Writes
// longer than the ring: a Write that must wait for room wakes it (HoldWake's wake), so
// it is never left waiting for a holder that does not run.
func TestHoldWakeStartsTheHolder(t *testing.T) {
	const retain = 1 << 10
	h := New(retain)
	want := make([]byte, 16*retain)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	var got []byte // the holder's copy, owned by the run under way
	off := int64(0)
	// smu guards running and woken; the hub is never called while it is held.
	var smu sync.Mutex
	running, woken := false, false
	var runs sync.WaitGroup
	// run is one run of the holder: it copies and releases what it finds, and ends once
	// it found nothing and was not woken since it last looked.
	run := func() {
		defer runs.Done()
		buf := make([]byte, 100)
		for {
			n, missed, _ := h.ReadAt(buf, off)
			if missed != 0 {
				t.Errorf("holder missed %d bytes at %d", missed, off)
			}
			got = append(got, buf[:n]...)
			off += int64(n)
			h.Release(off)
			if n > 0 {
				continue
			}
			smu.Lock()
			if woken {
				woken = false
				smu.Unlock()
				continue
			}
			running = false
			smu.Unlock()
			return
		}
	}
	wake := func() { // called with the hub's lock held
		smu.Lock()
		woken = true
		start := !running
		running = true
		smu.Unlock()
		if start {
			runs.Add(1)
			go run()
		}
	}
	if err := h.HoldWake(0, wake); err != nil {
		t.Fatal(err)
	}
	for p := want; len(p) > 0; {
		k := min(len(p), 3*retain+17)
		if _, err := h.Write(p[:k]); err != nil {
			t.Fatal(err)
		}
		p = p[k:]
	}
	runs.Wait()
	runs.Add(1)
	run()
	if !bytes.Equal(got, want) {
		t.Fatalf("holder got %d bytes, want %d (equal prefix: %v)", len(got), len(want), bytes.Equal(got, want[:min(len(got), len(want))]))
	}
}

// TestReserveLosesNothing: a producer that reads into the ring in place (Reserve, then
// Commit; Write while the ring is below its full size) through a ring a fraction of the
// stream's size: the holder, reading in place (HeldView), gets every byte in order; an
// ordinary reader gets the right bytes at every offset and misses only what left the
// ring; readers never see more than retain bytes, and the bytes a reservation lends are
// none they read (under -race, a lent byte that a reader reads is a data race).
func TestReserveLosesNothing(t *testing.T) {
	const retain = 4 << 10
	h := New(retain)
	if err := h.Hold(0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	want := make([]byte, 64*retain)
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	var reserved, short atomic.Int64
	go func() {
		for p := want; len(p) > 0; {
			k := min(len(p), 1+rng.IntN(2*ReserveMax))
			r := h.Reserve(k)
			if r == nil {
				if _, err := h.Write(p[:k]); err != nil {
					t.Errorf("write: %v", err)
					return
				}
				p = p[k:]
				continue
			}
			if len(r) < min(k, retain/2) {
				short.Add(1) // the ring's end
			}
			n := copy(r, p)
			if _, err := h.Commit(n); err != nil {
				t.Errorf("commit: %v", err)
				return
			}
			reserved.Add(1)
			p = p[n:]
		}
		h.Close()
	}()
	// An ordinary reader, at its own pace.
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 700)
		off := int64(0)
		for {
			ch := h.Notify()
			n, missed, err := h.ReadAt(buf, off)
			off += missed
			if !bytes.Equal(buf[:n], want[off:off+int64(n)]) {
				t.Errorf("reader: wrong bytes at %d", off)
				return
			}
			off += int64(n)
			if end, start := h.End(), h.Start(); end-start > retain {
				t.Errorf("readers see %d bytes, more than retain", end-start)
				return
			}
			if err == io.EOF {
				return
			}
			if n == 0 {
				<-ch
			}
		}
	}()
	var got []byte
	off := int64(0)
	for {
		ch := h.Notify()
		p, q, err := h.HeldView(off, 1000)
		got = append(append(got, p...), q...)
		off += int64(len(p) + len(q))
		h.Release(off)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("HeldView(%d): %v", off, err)
		}
		if len(p) == 0 {
			<-ch
		}
	}
	<-done
	if !bytes.Equal(got, want) {
		t.Fatalf("holder read %d bytes, not the %d written", len(got), len(want))
	}
	if reserved.Load() == 0 || short.Load() == 0 {
		t.Errorf("%d reservations, %d cut at the ring's end: the test did not cover them", reserved.Load(), short.Load())
	}
	if len(h.buf) != retain+ReserveMax {
		t.Errorf("ring of %d bytes, want %d", len(h.buf), retain+ReserveMax)
	}
}

// TestReserveAndCommitEdges: no reservation from a ring below its full size or a
// closed hub; a Commit of nothing ends the reservation; a Commit after Close is
// ErrClosed; a Commit of more than was lent panics.
func TestReserveAndCommitEdges(t *testing.T) {
	t.Parallel()
	h := New(1024)
	if p := h.Reserve(100); p != nil {
		t.Fatalf("an empty hub lent %d bytes", len(p))
	}
	h.Write(make([]byte, 1024))
	h.Write([]byte{0}) // past retain: the ring takes its full size
	p := h.Reserve(1 << 20)
	if len(p) == 0 || len(p) > 512 {
		t.Fatalf("a full ring lent %d bytes", len(p))
	}
	if n, err := h.Commit(0); n != 0 || err != nil || h.End() != 1025 {
		t.Fatalf("Commit(0): %d %v, End %d", n, err, h.End())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Commit of more than was lent did not panic")
			}
		}()
		h.Commit(1)
	}()
	h.Reserve(10)
	h.Close()
	if n, err := h.Commit(10); n != 0 || !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Close: %d %v", n, err)
	}
	if p := h.Reserve(10); p != nil {
		t.Errorf("a closed hub lent %d bytes", len(p))
	}
}

// BenchmarkProducer: a session's reader moving 4 KiB reads of a flood into a full ring,
// the read itself stood in for by a copy from a source the size of a pty's buffer:
// Write reads into a buffer of its own and copies it into the ring, Reserve reads into
// the ring.
func BenchmarkProducer(b *testing.B) {
	src := stream(4 << 10)
	for _, reserve := range []bool{false, true} {
		b.Run(map[bool]string{false: "Write", true: "Reserve"}[reserve], func(b *testing.B) {
			h := New(0)
			h.Write(make([]byte, DefaultRetain+1)) // the ring at its full size
			own := make([]byte, ReserveMax)
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if reserve {
					h.Commit(copy(h.Reserve(len(src)), src))
				} else {
					h.Write(own[:copy(own, src)])
				}
			}
		})
	}
}
