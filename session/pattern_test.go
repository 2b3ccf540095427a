package session

import (
	"strconv"
	"strings"
	"testing"
)

// TestPatternCache: a wait_for pattern sent again is not compiled again (the same
// compiled value serves both calls), the cache stays bounded, a long pattern is not kept,
// and a bad pattern is still refused each time.
func TestPatternCache(t *testing.T) {
	a, err := compilePattern(`>>> $`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := compilePattern(`>>> $`)
	if a != b {
		t.Error("the same pattern was compiled twice")
	}
	for i := range 3 * maxPatterns {
		if _, err := compilePattern(`p` + strconv.Itoa(i) + `$`); err != nil {
			t.Fatal(err)
		}
	}
	patterns.mu.Lock()
	n := len(patterns.m)
	patterns.mu.Unlock()
	if n > maxPatterns {
		t.Errorf("%d patterns kept, want at most %d", n, maxPatterns)
	}
	long := strings.Repeat("a", maxPatternLen+1)
	l1, _ := compilePattern(long)
	l2, _ := compilePattern(long)
	if l1 == l2 || l1.String() != long {
		t.Error("a pattern over the length limit was kept")
	}
	for range 2 {
		if _, err := compilePattern(`(`); err == nil || !strings.Contains(err.Error(), "wait_for") {
			t.Errorf("a bad pattern: %v", err)
		}
	}
}
