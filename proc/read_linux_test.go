package proc

import (
	"bytes"
	"os"
	"testing"
)

// TestReaderScratchSmall: a Reader that has read a stat file keeps a 512-byte scratch
// buffer (a Reader is kept per session, idle or not), and still reads a file longer
// than that whole (/proc/self/limits, ~1.3 KiB and fixed while the test runs).
func TestReaderScratchSmall(t *testing.T) {
	var r Reader
	if _, ok := r.Stat(os.Getpid()); !ok {
		t.Fatal("cannot read /proc/self/stat")
	}
	if len(r.buf) != 512 {
		t.Errorf("after a stat file the scratch buffer is %d bytes, want 512", len(r.buf))
	}
	want, err := os.ReadFile("/proc/self/limits")
	if err != nil || len(want) <= 512 || len(want) > 4096 {
		t.Fatalf("/proc/self/limits: %d bytes, %v", len(want), err)
	}
	got, ok := r.read("/proc/self/limits")
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("read /proc/self/limits: %d bytes, want %d", len(got), len(want))
	}
}
