package testtool

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer that a test may read while another goroutine (a command's
// output copier) writes to it.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
