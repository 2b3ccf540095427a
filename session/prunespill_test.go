package session

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/transcript"
)

// TestPruneKeepsListedSessionsSpill: an ended session stays listed and its output
// readable, byte for byte, what left memory from its transcript: bytes that are not
// UTF-8 from its raw spill. The retention pass that runs at a start (another session's,
// in this manager or in another one sharing the state directory) deleted every spill
// no writer held open, and a finished transcript holds none: the ended session's
// non-UTF-8 output became unreadable. Here the pass is run as a start runs it.
func TestPruneKeepsListedSessionsSpill(t *testing.T) {
	t.Parallel()
	data := make([]byte, 256<<10)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	file := filepath.Join(t.TempDir(), "flood")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	m, err := NewManager(Options{StateDir: state, Retain: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	y := int64(120000)
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: "stty -opost -echo && cat " + file,
		YieldTimeMs: &y, MaxOutputTokens: new(int64(100))})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "exited" {
		t.Fatalf("state %s, want exited", r.State)
	}
	s, err := m.lookupID(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		raw, missed, _ := s.readRaw(0, int64(len(data)))
		if missed != 0 || !bytes.Equal(raw, data) {
			t.Fatalf("%s: read back %d bytes (missed %d) of the %d printed, first difference at %d",
				when, len(raw), missed, len(data), firstDiffAt(raw, data))
		}
	}
	check("ended")
	dir, err := transcript.SessionsDir(state)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transcript.Prune(dir, transcript.DefaultKeep, transcript.DefaultKeepBytes, time.Now()); err != nil {
		t.Fatal(err)
	}
	check("after the retention pass")
}
