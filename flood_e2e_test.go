package ptyhub_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ptyhub/ptyhub/session"
)

// floodInputs are the outputs a flood test prints, each tens of MB: what a program can
// write at pty speed that is hardest to record — bytes that are not text, NULs (six
// bytes each in the .cast), and a coloured test log (an eighth of that under the race
// detector).
var floodInputs = []struct {
	name string
	make func() []byte
}{
	{"random", func() []byte {
		b := make([]byte, 20<<20/floodScale)
		rng := rand.New(rand.NewPCG(7, 11))
		for i := 0; i+8 <= len(b); i += 8 {
			v := rng.Uint64()
			for j := range 8 {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		return b
	}},
	{"nul", func() []byte { return make([]byte, 20<<20/floodScale) }},
	{"coloured-log", func() []byte {
		var b bytes.Buffer
		rng := rand.New(rand.NewPCG(3, 5))
		for i := 0; b.Len() < 40<<20/floodScale; i++ {
			switch rng.IntN(20) {
			case 0:
				fmt.Fprintf(&b, "\x1b[1;31m--- FAIL\x1b[0m: TestThing/case_%d (%d.%02ds)\r\n    thing_test.go:%d: got «%x», want ✓\r\n", i, rng.IntN(9), rng.IntN(100), rng.IntN(900), rng.Uint32())
			case 1:
				fmt.Fprintf(&b, "\x1b[33m[WARN]\x1b[39m \x1b[2m%08d\x1b[22m retrying in %dms…\r", i, rng.IntN(1000))
			default:
				fmt.Fprintf(&b, "\x1b[32m=== RUN\x1b[0m   TestThing/case_%d \x1b[38;5;%dm%s\x1b[0m\r\n", i, rng.IntN(256), strings.Repeat("·", rng.IntN(40)))
			}
		}
		return b.Bytes()
	}},
}

// castText is what the .cast's output events decode to for raw output data: the bytes
// themselves where they are UTF-8, U+FFFD for each byte that is not.
func castText(data []byte) []byte {
	out := make([]byte, 0, len(data)+len(data)/2)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, data[i:i+size]...)
		}
		i += size
	}
	return out
}

// TestFloodTranscriptLosesNothing: a program that prints tens of MB as fast as the pty
// takes them (random bytes, NULs, a coloured test log) gets all of it into its
// transcript — the .cast's output events decode to exactly what it printed, with no loss
// marker — and the agent's result accounts for every byte: nothing missed, the digest
// and count of exactly those bytes. After the flood, read_output of the first bytes
// reads them back though they left memory long ago.
//
// Each input runs on its own manager and state directory, in parallel with the rest.
func TestFloodTranscriptLosesNothing(t *testing.T) {
	t.Parallel()
	for _, in := range floodInputs {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			data := in.make()
			file := filepath.Join(t.TempDir(), "flood")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			_, c, state := trManager(t, session.Options{})
			// -opost: the terminal passes every byte as it is (no \n → \r\n), so what the
			// session reads is exactly the file.
			r := exec(t, c, session.ExecRequest{Cmd: "stty -opost && cat " + file,
				MaxOutputTokens: new(int64(2000)), YieldTimeMs: new(int64(300000))})
			if r.State != session.StateExited || r.ExitCode == nil || *r.ExitCode != 0 {
				t.Fatalf("flood did not end well: %s", exitOf(r))
			}
			if r.MissedBytes != 0 || r.NextOffset != int64(len(data)) {
				t.Errorf("result missed %d bytes, next offset %d of %d", r.MissedBytes, r.NextOffset, len(data))
			}
			if r.TruncatedRange == nil || r.TruncatedRange[0] < 0 || r.TruncatedRange[1] > int64(len(data)) {
				t.Errorf("truncated range %v does not lie within the %d bytes", r.TruncatedRange, len(data))
			}
			if cp := r.Completion; cp == nil || cp.OutputBytes != int64(len(data)) || cp.OutputSHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("completion %+v does not account for the %d bytes printed (sha256 %x)", cp, len(data), sum)
			}

			path, out := trFinish(t, state, r)
			if want := castText(data); !bytes.Equal(out, want) {
				t.Errorf("the .cast decodes to %d bytes, want %d (first difference at %d)", len(out), len(want), firstDiff(out, want))
			}
			_, evs := trEvents(t, path)
			for _, e := range evs {
				if e[1] == "m" && strings.Contains(e[2].(string), "lost") {
					t.Errorf("loss marker in the transcript: %q", e[2])
				}
			}

			// The first bytes left the 4 MiB ring long ago: they come back from disk.
			to := int64(8 << 10)
			rr, err := c.Read(context.Background(), session.ReadRequest{SessionID: r.SessionID, View: "raw",
				From: new(int64(0)), To: &to, MaxOutputTokens: new(int64(100000))})
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.ToValidUTF8(string(data[:to]), "\uFFFD"); rr.MissedBytes != 0 || rr.Output != want {
				t.Errorf("read_output 0-%d after the flood: missed %d, %d bytes of output, want %d (notices %v)",
					to, rr.MissedBytes, len(rr.Output), len(want), rr.Notices)
			}
		})
	}
}

// firstDiff returns the first index where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
