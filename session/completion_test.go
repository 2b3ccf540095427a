package session_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// TestTextLogCap: the plain-text log of a session's output stops at the transcript's
// cap, on a line boundary, and ends with a line saying how much was left out; the line
// count still covers the whole output.
func TestTextLogCap(t *testing.T) {
	t.Parallel()
	const limit = 4096
	m, err := session.NewManager(session.Options{StateDir: t.TempDir(), RecordCap: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c := m.NewClient("test")
	y := int64(30_000)
	r, err := c.Exec(context.Background(), session.ExecRequest{Cmd: "seq 1 20000", YieldTimeMs: &y})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != session.StateExited || r.Completion == nil || r.LogPath == "" {
		t.Fatalf("no completion facts: %+v", r)
	}
	if r.OutputLines != 20000 {
		t.Errorf("output_lines = %d, want 20000", r.OutputLines)
	}
	b, err := os.ReadFile(r.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "[ptyhub: ") || !strings.Contains(last, "not logged past the 4096-byte cap]") {
		t.Fatalf("log does not end with the cap line: %q", last)
	}
	body := strings.Join(lines[:len(lines)-1], "\n") + "\n"
	if len(body) > limit+1 { // +1: the newline that ends a cut line before the cap line
		t.Errorf("log holds %d bytes of text, cap %d", len(body), limit)
	}
	if !strings.HasPrefix(body, "1\n2\n3\n") || len(lines) < 100 {
		t.Errorf("log does not start with the output: %q…", body[:min(len(body), 40)])
	}
}

// TestTextLogWhole: the text log of an output far larger than one chunk of the log, in
// bursts between which the recorder catches up (and closes the log's file), holds the
// whole text view in order.
func TestTextLogWhole(t *testing.T) {
	t.Parallel()
	m, err := session.NewManager(session.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c := m.NewClient("test")
	y := int64(60_000)
	r, err := c.Exec(context.Background(), session.ExecRequest{Cmd: "seq 1 100000; read x; seq 100001 200000", WaitFor: "(?m)^100000$", YieldTimeMs: &y})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, Chars: "\n", YieldTimeMs: &y}); err != nil {
		t.Fatal(err)
	}
	if r.State != session.StateExited || r.Completion == nil || r.LogPath == "" {
		t.Fatalf("no completion facts: %+v", r)
	}
	b, err := os.ReadFile(r.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 1; i <= 200000; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
		if i == 100000 {
			want.WriteByte('\n') // the line typed to read (echoed)
		}
	}
	if string(b) != want.String() {
		t.Errorf("log holds %d bytes, want the %d of the text view", len(b), want.Len())
	}
}
