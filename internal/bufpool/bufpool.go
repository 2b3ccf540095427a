// Package bufpool keeps a few byte buffers of one size for reuse.
//
// It is for large buffers that a process uses one or two at a time, again and again (a
// collect's read buffer, a recorder's copy buffer): a sync.Pool is the wrong tool there.
// A sync.Pool drops what it holds at every second garbage collection, and a buffer put
// back in one processor's private slot is not found by a Get on another, so with one
// buffer in use at a time a new one was made about once per collection, and each one
// made brings the next collection closer. A Pool here keeps up to its limit across
// collections, under a mutex held only to push or pop.
package bufpool

import "sync"

// Pool holds up to keep buffers of size bytes. The zero Pool is not usable; use New.
// Safe for concurrent use.
type Pool struct {
	size, keep int

	mu   sync.Mutex
	free []*[]byte // buffers of len size, at most keep
}

// New returns a pool of buffers of size bytes that keeps at most keep of them. It
// allocates nothing, so a package-level pool (var p = bufpool.New(...)) is laid out by
// the compiler instead of built while the program starts; the list of kept buffers
// grows on the first Puts.
func New(size, keep int) *Pool {
	return &Pool{size: size, keep: keep}
}

// Get returns a buffer of len size: one kept, or a new one.
func (p *Pool) Get() *[]byte {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	b := make([]byte, p.size)
	return &b
}

// Put gives b back. It is kept if the pool holds fewer than its limit and b still has
// the pool's size as capacity (its length is restored); else it is left to the
// collector. b must not be used after Put.
func (p *Pool) Put(b *[]byte) {
	if b == nil || cap(*b) != p.size {
		return
	}
	*b = (*b)[:p.size]
	p.mu.Lock()
	if len(p.free) < p.keep {
		p.free = append(p.free, b)
	}
	p.mu.Unlock()
}
