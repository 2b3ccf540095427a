package bufpool

import (
	"runtime"
	"testing"
)

// A buffer given back is found again after garbage collections (a sync.Pool drops it at
// the second), whole and at full length even if it was given back resliced.
func TestKeptAcrossCollections(t *testing.T) {
	p := New(1<<16, 2)
	b := p.Get()
	(*b)[0] = 7
	*b = (*b)[:0]
	p.Put(b)
	runtime.GC()
	runtime.GC()
	runtime.GC()
	got := p.Get()
	if got != b {
		t.Fatal("the buffer given back was not kept across collections")
	}
	if len(*got) != 1<<16 || (*got)[0] != 7 {
		t.Fatalf("the kept buffer: len %d, first byte %d", len(*got), (*got)[0])
	}
}

// At most keep buffers are kept, and a buffer of another capacity is never kept.
func TestKeepsAtMostItsLimit(t *testing.T) {
	p := New(64, 2)
	a, b, c := p.Get(), p.Get(), p.Get()
	p.Put(a)
	p.Put(b)
	p.Put(c)
	other := make([]byte, 32)
	p.Put(&other)
	p.Put(nil)
	if len(p.free) != 2 {
		t.Fatalf("%d buffers kept, want 2", len(p.free))
	}
	for range 2 {
		if g := p.Get(); g != b && g != a {
			t.Fatal("a buffer not given back came out")
		}
	}
	if g := p.Get(); g == a || g == b || g == c || len(*g) != 64 {
		t.Fatal("an empty pool did not make a new buffer")
	}
}

// With one buffer in use at a time, Get and Put allocate nothing once it is made.
func TestSteadyUseAllocatesNothing(t *testing.T) {
	p := New(32<<10, 4)
	p.Put(p.Get())
	if n := testing.AllocsPerRun(100, func() {
		b := p.Get()
		runtime.GC()
		p.Put(b)
	}); n != 0 {
		t.Fatalf("%v allocations per Get and Put", n)
	}
}
