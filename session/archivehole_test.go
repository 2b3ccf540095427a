package session

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadAcrossArchiveEnd: output the transcript never recorded (past its cap, or after
// a full disk stopped it) and that left memory is a hole in the middle of what
// read_output may be asked for, not only at its start. A read whose range holds bytes
// from the transcript and then such a hole returns those bytes at their own offsets and
// says where it stopped; it never labels them as the bytes after the hole. Every window
// of the output, read in turn, comes back as the bytes printed at the offsets the result
// names (its start plus missed_bytes), and nothing in memory or on disk is skipped.
func TestReadAcrossArchiveEnd(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for i := 0; b.Len() < 512<<10; i++ {
		fmt.Fprintf(&b, "line %06d\r\n", i)
	}
	data := b.Bytes()
	file := filepath.Join(t.TempDir(), "flood")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Options{StateDir: t.TempDir(), Retain: 64 << 10, RecordCap: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	y := int64(120000)
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: "stty -opost -echo && cat " + file + " && echo END-OF-FLOOD && read x",
		WaitFor: "END-OF-FLOOD", YieldTimeMs: &y, MaxOutputTokens: new(int64(100))})
	if err != nil {
		t.Fatal(err)
	}
	if r.ReturnedBecause != BecausePattern {
		t.Fatalf("returned because %s, want the pattern", r.ReturnedBecause)
	}
	s, err := m.lookupID(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if start := s.hub.Start(); start < int64(len(data))/2 {
		t.Fatalf("the ring still holds offset %d", start)
	}
	budget := int64(250000)
	shown, holes := 0, 0
	const window = 4 << 10
	for from := int64(0); from < int64(len(data)); from += window / 2 {
		to := min(from+window, int64(len(data)))
		rr, err := c.Read(context.Background(), ReadRequest{SessionID: r.SessionID, View: "raw", From: &from, To: &to, MaxOutputTokens: &budget})
		if err != nil {
			t.Fatal(err)
		}
		base := from + rr.MissedBytes
		got := rr.Output
		if base+int64(len(got)) > int64(len(data)) || got != string(data[base:base+int64(len(got))]) {
			t.Fatalf("read %d-%d: %d bytes shown as from offset %d (missed %d, next %d, warnings %q), not the bytes printed there",
				from, to, len(got), base, rr.MissedBytes, rr.NextOffset, rr.Warnings)
		}
		if end := base + int64(len(got)); end != rr.NextOffset {
			t.Fatalf("read %d-%d: bytes %d-%d shown, next offset %d", from, to, base, end, rr.NextOffset)
		}
		if rr.NextOffset < to {
			holes++
			if !strings.Contains(strings.Join(rr.Warnings, "\n"), fmt.Sprintf("bytes %d to ", rr.NextOffset)) {
				t.Fatalf("read %d-%d stopped at %d without saying so: %q", from, to, rr.NextOffset, rr.Warnings)
			}
		}
		shown += len(got)
	}
	if holes == 0 {
		t.Fatalf("no read stopped at a hole: the test did not reach the transcript's end")
	}
	t.Logf("%d bytes shown over the windows; %d windows stopped at the hole", shown, holes)
}
