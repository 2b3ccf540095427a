package session

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/transcript"
)

// TestQuietSessionClosesItsTextLog: the text log's file, kept open from one round of the
// recorder to the next while output floods in, is closed once the output pauses (the
// recorder's run ends, or waits for more output longer than logIdle), so a live session
// that printed a flood and went quiet holds no fd for its .log (whose file has the text
// so far but the last chunk, up to 64 KiB, written at the end).
func TestQuietSessionClosesItsTextLog(t *testing.T) {
	m, err := NewManager(Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	ctx := context.Background()
	y := int64(0)
	const n = 1 << 20 // many rounds and 64 KiB flushes of the log
	r, err := c.Exec(ctx, ExecRequest{Cmd: "head -c 1048576 /dev/zero | tr '\\0' a; echo; echo DONE; exec sleep 1000", YieldTimeMs: &y})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill(ctx, KillRequest{SessionID: r.SessionID, Remove: true})
	s, err := m.lookup(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	log := transcript.LogPath(s.rec.dir, s.uuid)
	for deadline := time.Now().Add(60 * time.Second); ; {
		if s.rec.copied.Load() >= int64(n+len("\r\nDONE\r\n")) && !fdOpenOn(t, log) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the text log's file is still open 60 s after the output went quiet (copied %d)", s.rec.copied.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if st, err := os.Stat(log); err != nil {
		t.Fatal(err)
	} else if st.Size() < n-logChunk {
		t.Fatalf("the text log's file holds %d bytes, want the flood's %d but the last chunk", st.Size(), n)
	}
}

// fdOpenOn reports whether this process has a file descriptor open on path.
func fdOpenOn(t *testing.T, path string) bool {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l == path {
			return true
		}
	}
	return false
}
