package session

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ptyhub/ptyhub/transcript"
)

// archiveFloods are outputs far larger than the test's 64 KiB ring: text with
// multi-byte characters (which the pty's reads split between chunks), the same with
// bytes that are not UTF-8 mixed in, and random bytes (a binary flood).
var archiveFloods = []struct {
	name  string
	valid bool // all valid UTF-8: the transcript needs no spill
	make  func() []byte
}{
	{"utf8", true, func() []byte {
		var b bytes.Buffer
		for i := 0; b.Len() < 2<<20; i++ {
			fmt.Fprintf(&b, "line %d é€😀 \x1b[1m\"quoted\"\\\x1b[0m\t\r\n", i)
		}
		return b.Bytes()
	}},
	{"mixed", false, func() []byte {
		var b bytes.Buffer
		for i := 0; b.Len() < 2<<20; i++ {
			if i%3000 == 17 {
				b.WriteString("not UTF-8: \xff\xfe \xe2\x82 \xc3(\r\n")
			}
			fmt.Fprintf(&b, "line %d é€😀 \x1b[1m\"quoted\"\\\x1b[0m\t\r\n", i)
		}
		return b.Bytes()
	}},
	{"binary", false, func() []byte {
		b := make([]byte, 1<<20)
		rng := rand.New(rand.NewPCG(5, 9))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}},
}

// TestArchivedOutputExact: output that left the in-memory ring reads back byte for byte
// from the transcript — across event boundaries, characters split between the pty's
// reads, bytes that are not UTF-8, a binary flood — while the session runs, after it
// finished (the writer closed), and not at all once it left the manager (Release). Output
// that is all valid UTF-8 creates no raw spill: the .cast holds it; otherwise the spill
// holds only the events with invalid bytes.
func TestArchivedOutputExact(t *testing.T) {
	t.Parallel()
	for _, fl := range archiveFloods {
		t.Run(fl.name, func(t *testing.T) {
			t.Parallel()
			data := fl.make()
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
			// -opost: the terminal passes every byte as it is, so the session reads
			// exactly the file; the program then waits for a line.
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
			check := func(when string) {
				t.Helper()
				if s.hub.Start() < int64(len(data))/2 {
					t.Fatalf("%s: the ring still holds offset %d", when, s.hub.Start())
				}
				raw, missed, _ := s.readRaw(0, int64(len(data)))
				if missed != 0 || !bytes.Equal(raw, data) {
					t.Fatalf("%s: read back %d bytes (missed %d), want the %d printed (first difference at %d)",
						when, len(raw), missed, len(data), firstDiffAt(raw, data))
				}
				rng := rand.New(rand.NewPCG(1, 2))
				for range 200 {
					from := rng.Int64N(int64(len(data)))
					to := min(int64(len(data)), from+1+rng.Int64N(100<<10))
					raw, missed, _ := s.readRaw(from, to)
					if missed != 0 || !bytes.Equal(raw, data[from:to]) {
						t.Fatalf("%s: read %d-%d: %d bytes (missed %d), first difference at %d",
							when, from, to, len(raw), missed, firstDiffAt(raw, data[from:to]))
					}
				}
			}
			check("while the session runs")

			dir, _ := transcript.SessionsDir(state)
			spill := transcript.SpillPath(dir, r.UUID)
			fi, err := os.Stat(spill)
			switch {
			case fl.valid && err == nil:
				t.Errorf("a raw spill of %d bytes was written for output that is all valid UTF-8", fi.Size())
			case !fl.valid && err != nil:
				t.Errorf("no raw spill for output that is not UTF-8: %v", err)
			case fl.name == "mixed":
				// A sparse file: only the events with the invalid bytes take room.
				used := fi.Sys().(*syscall.Stat_t).Blocks * 512
				if used > int64(len(data))/4 {
					t.Errorf("the raw spill takes %d bytes of disk for %d bytes of output with a few invalid bytes", used, len(data))
				}
				t.Logf("the raw spill takes %d bytes of disk for %d bytes of output", used, len(data))
			}

			if _, err := c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "\n", YieldTimeMs: &y}); err != nil {
				t.Fatal(err)
			}
			<-s.rec.done // the transcript is finished and its writer closed
			check("after the session finished")

			m.forget(s)
			m.releasing.Wait()
			if _, err := os.Stat(spill); err == nil {
				t.Error("the raw spill is still there after the session left the manager")
			}
			if n := s.rec.readAt(make([]byte, 10), 0); n != 0 {
				t.Errorf("read %d archived bytes after the session left the manager", n)
			}
		})
	}
}

// firstDiffAt returns the first index where a and b differ.
func firstDiffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
