package ptyhub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ptyhub/ptyhub/pty"
	"github.com/ptyhub/ptyhub/session"
	"github.com/ptyhub/ptyhub/transcript"
)

// TestMain points XDG_STATE_HOME at a temporary directory for the whole test binary
// (and the ptyhub processes it starts), so no test ever records into the real home. For
// benchmarks the directory is made beside a user's state (~/.local/state), where
// transcripts go in real use: on some machines creating a file under /tmp costs far
// more (0.85 ms of kernel time on the 2-core VM of BENCHMARKS.md, 40× a home directory
// on the same disk), and every session creates two.
func TestMain(m *testing.M) {
	flag.Parse()
	parent := ""
	if b := flag.Lookup("test.bench"); b != nil && b.Value.String() != "" {
		if home, err := os.UserHomeDir(); err == nil {
			parent = filepath.Join(home, ".local", "state")
			os.MkdirAll(parent, 0o700)
		}
	}
	dir, err := os.MkdirTemp(parent, "ptyhub-state-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	if svBinDir != "" {
		os.RemoveAll(svBinDir)
	}
	os.Exit(code)
}

// trManager returns a manager recording into a fresh state directory, and that directory.
func trManager(t *testing.T, opts session.Options) (*session.Manager, *session.Client, string) {
	t.Helper()
	opts.StateDir = t.TempDir()
	m, c := newClient(t, opts)
	return m, c, opts.StateDir
}

// trFinish waits (following the file, as `ptyhub logs -f` does) until the transcript of
// session r is finished, and returns its path and recorded output.
func trFinish(t *testing.T, stateDir string, r *session.Result) (string, []byte) {
	t.Helper()
	dir, _ := transcript.SessionsDir(stateDir)
	path := transcript.Path(dir, r.UUID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rc, err := transcript.Output(ctx, path, transcript.OutputOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("following %s: %v", path, err)
	}
	return path, out
}

// trEvents checks the JSON-lines shape of a cast file and returns its events.
func trEvents(t *testing.T, path string) (map[string]any, [][3]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(data) {
		t.Errorf("%s is not valid UTF-8", path)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var h map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil {
		t.Fatalf("header %q: %v", lines[0], err)
	}
	var evs [][3]any
	for i, l := range lines[1:] {
		var e [3]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d %q: %v", i+2, l, err)
		}
		if _, ok := e[0].(float64); !ok {
			t.Fatalf("line %d %q: time is not a number", i+2, l)
		}
		if c, _ := e[1].(string); len(c) != 1 || !strings.Contains("oirm", c) {
			t.Fatalf("line %d %q: bad event code", i+2, l)
		}
		if _, ok := e[2].(string); !ok {
			t.Fatalf("line %d %q: data is not a string", i+2, l)
		}
		evs = append(evs, e)
	}
	return h, evs
}

// trAsciinemaCat runs Debian's `asciinema cat` on a pseudo-terminal (it opens /dev/tty).
func trAsciinemaCat(t *testing.T, path string) string {
	t.Helper()
	bin, err := osexec.LookPath("asciinema")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("asciinema is not installed (apt-get install asciinema)")
		}
		t.Skip("asciinema is not installed: skipping the asciinema validation")
	}
	master, slave, err := pty.Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	cmd := osexec.Command(bin, "cat", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	out, _ := io.ReadAll(master)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("asciinema cat %s: %v\n%s", path, err, out)
	}
	return string(out)
}

func trSeq(from, to int, nl string) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteString(nl)
	}
	return b.String()
}

// TestTranscriptCast: a session with split UTF-8, input, a resize and an exit code makes
// a cast that asciinema accepts, with every event in place.
func TestTranscriptCast(t *testing.T) {
	t.Parallel()
	_, c, state := trManager(t, session.Options{})
	r := exec(t, c, session.ExecRequest{
		Cmd:     `stty -echo; printf 'euro \342\202'; read x; printf '\254 done\n'; stty echo; printf 'ready> '; read y; echo "typed $y"; exit 3`,
		WaitFor: "euro", YieldTimeMs: new(int64(10000))})
	if _, err := c.Resize(context.Background(), session.ResizeRequest{SessionID: r.SessionID, Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\n", WaitFor: "ready> ", YieldTimeMs: new(int64(10000))})
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "hello\n", YieldTimeMs: new(int64(10000))})
	if r.State != session.StateExited {
		t.Fatalf("not exited: %+v", r)
	}
	path, out := trFinish(t, state, r)
	if !bytes.Contains(out, []byte("euro € done")) || !bytes.Contains(out, []byte("typed hello")) {
		t.Errorf("recorded output %q", out)
	}
	h, evs := trEvents(t, path)
	if h["version"] != float64(2) || h["width"] != float64(80) || h["height"] != float64(24) ||
		h["command"] == nil || h["timestamp"] == nil {
		t.Errorf("header %v", h)
	}
	if env, _ := h["env"].(map[string]any); env["TERM"] != "xterm-256color" {
		t.Errorf("header env %v", h["env"])
	}
	var codes, inputs []string
	for _, e := range evs {
		codes = append(codes, e[1].(string))
		switch e[1] {
		case "i", "r", "m":
			inputs = append(inputs, e[1].(string)+":"+e[2].(string))
		case "o":
			if strings.ContainsRune(e[2].(string), utf8.RuneError) {
				t.Errorf("U+FFFD in output event %q", e[2])
			}
		}
	}
	want := []string{"r:100x30", "m:[1 bytes of hidden input]", "i:hello\n", "m:[session ended: exited with code 3]"}
	if strings.Join(inputs, "|") != strings.Join(want, "|") {
		t.Errorf("non-output events %q, want %q", inputs, want)
	}
	if codes[len(codes)-1] != "m" {
		t.Errorf("last event is %q, not the end marker", codes[len(codes)-1])
	}
	if got := trAsciinemaCat(t, path); !strings.Contains(got, "€ done") || !strings.Contains(got, "typed hello") {
		t.Errorf("asciinema cat printed %q", got)
	}
}

// TestTranscript5000Lines: the transcript's output is exactly what the program printed.
func TestTranscript5000Lines(t *testing.T) {
	t.Parallel()
	// The default ring: with a tiny one a recorder stalled for a millisecond would
	// legitimately lose bytes (and mark the loss); that is tested elsewhere.
	_, c, state := trManager(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: "seq 1 5000", MaxOutputTokens: new(int64(100))})
	_, r = untilExit(t, c, r)
	path, out := trFinish(t, state, r)
	if want := trSeq(1, 5000, "\r\n"); string(out) != want {
		t.Errorf("transcript output differs from what seq printed: %d bytes, want %d", len(out), len(want))
	}
	rc, err := transcript.Output(context.Background(), path, transcript.OutputOptions{Text: true})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(rc)
	rc.Close()
	if want := trSeq(1, 5000, "\n"); string(text) != want {
		t.Errorf("text view differs: %d bytes, want %d", len(text), len(want))
	}
}

// TestTranscriptRereadAfterRingMoved: the cut range of a truncated result stays readable
// (from the transcript's spill) after megabytes more went through a 64 KiB ring. The
// program prints blocks smaller than the ring and waits for a line between them; the test
// sends the next line only once the transcript has recorded the block (followed as
// `ptyhub logs -f` does), so the recorder is never outrun there. The last block, 6.9 MB,
// runs at full speed.
func TestTranscriptRereadAfterRingMoved(t *testing.T) {
	t.Parallel()
	m, c, _ := trManager(t, session.Options{Retain: 64 << 10})
	r := exec(t, c, session.ExecRequest{
		Cmd:     "seq 1 5000; read x; seq 5001 10000; read x; seq 10001 15000; read x; seq 1 1000000; read y",
		WaitFor: `(?m)^5000$`, MaxOutputTokens: new(int64(300)), YieldTimeMs: new(int64(60000))})
	if r.TruncatedRange == nil {
		t.Fatalf("not truncated: %+v", r)
	}
	path, err := m.TranscriptPath(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	follow, err := transcript.Output(ctx, path, transcript.OutputOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer follow.Close()
	var recorded int64
	waitRecorded := func(n int64) {
		t.Helper()
		buf := make([]byte, 64<<10)
		for recorded < n {
			k, err := follow.Read(buf)
			recorded += int64(k)
			if err != nil {
				t.Fatalf("following the transcript at %d of %d bytes: %v", recorded, n, err)
			}
		}
	}
	first := trSeq(1, 5000, "\r\n")
	from, to := r.TruncatedRange[0], r.TruncatedRange[1]
	if from < 0 || to > int64(len(first)) || to <= from {
		t.Fatalf("cut range %d-%d not inside the first %d bytes", from, to, len(first))
	}
	for _, end := range []string{"10000", "15000", "1000000"} {
		waitRecorded(r.NextOffset)
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\n",
			WaitFor: "(?m)^" + end + "$", MaxOutputTokens: new(int64(100)), YieldTimeMs: new(int64(60000))})
		if r.ReturnedBecause != session.BecausePattern {
			t.Fatalf("block ending %s: returned because %s", end, r.ReturnedBecause)
		}
	}
	if r.NextOffset < 6<<20 {
		t.Fatalf("only %d bytes flowed", r.NextOffset)
	}
	for _, rg := range [][2]int64{{from, to}, {from, from + 100}, {to - 100, to}, {(from + to) / 2, (from+to)/2 + 7}} {
		rr, err := c.Read(context.Background(), session.ReadRequest{SessionID: r.SessionID, View: "raw",
			From: &rg[0], To: &rg[1], MaxOutputTokens: new(int64(100000))})
		if err != nil {
			t.Fatal(err)
		}
		if rr.MissedBytes != 0 || rr.Output != first[rg[0]:rg[1]] {
			t.Errorf("read %d-%d: missed %d, output %q…, want %q…", rg[0], rg[1], rr.MissedBytes,
				rr.Output[:min(40, len(rr.Output))], first[rg[0]:min(rg[1], rg[0]+40)])
		}
	}
	// Text view of a range that left memory.
	rr, err := c.Read(context.Background(), session.ReadRequest{SessionID: r.SessionID, From: new(int64(0)), To: new(int64(18))})
	if err != nil || rr.Output != "1\n2\n3\n4\n5\n6\n" {
		t.Errorf("text read of offsets 0-18: %q, %v", rr.Output, err)
	}
}

// TestTranscriptHiddenInput: what is typed with echo off never reaches the disk.
func TestTranscriptHiddenInput(t *testing.T) {
	t.Parallel()
	_, c, state := trManager(t, session.Options{})
	r := exec(t, c, session.ExecRequest{
		Cmd:     `stty -echo; printf 'Password: '; read pw; stty echo; echo; echo "got ${#pw} chars"`,
		WaitFor: "Password: ", YieldTimeMs: new(int64(10000))})
	if !r.PasswordPrompt {
		t.Fatalf("no password prompt: %+v", r)
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "hunter2\n", YieldTimeMs: new(int64(10000))})
	path, out := trFinish(t, state, r)
	if !bytes.Contains(out, []byte("got 7 chars")) {
		t.Errorf("output %q", out)
	}
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte(`"m", "[8 bytes of hidden input]"`)) {
		t.Errorf("no hidden-input marker in %s", data)
	}
	// grep -r hunter2 over the whole state directory, spills included.
	filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		if d.IsDir() {
			if fi.Mode().Perm() != 0o700 && p != state {
				t.Errorf("%s: mode %v, want 0700", p, fi.Mode().Perm())
			}
			return nil
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, fi.Mode().Perm())
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("hunter2")) {
			t.Errorf("%s contains the secret", p)
		}
		return nil
	})
}

// TestTranscriptCap: past the per-session cap recording stops with a marker that says
// how much was not recorded; the program and the agent are unaffected.
func TestTranscriptCap(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	_, c, state := trManager(t, session.Options{RecordCap: limit})
	r := exec(t, c, session.ExecRequest{Cmd: "seq 1 100000", MaxOutputTokens: new(int64(100))})
	_, r = untilExit(t, c, r)
	if *r.ExitCode != 0 || r.NextOffset != int64(len(trSeq(1, 100000, "\r\n"))) {
		t.Fatalf("program affected: %+v", r)
	}
	path, out := trFinish(t, state, r)
	fi, _ := os.Stat(path)
	if fi.Size() > limit+1024 {
		t.Errorf("transcript %d bytes, cap %d", fi.Size(), limit)
	}
	_, evs := trEvents(t, path)
	var markers []string
	for _, e := range evs {
		if e[1] == "m" {
			markers = append(markers, e[2].(string))
		}
	}
	notRecorded := r.NextOffset - int64(len(out))
	want := []string{
		fmt.Sprintf("[transcript cap of %d bytes reached: recording stopped]", limit),
		fmt.Sprintf("[%d bytes of output were not recorded past the cap]", notRecorded),
		"[session ended: exited with code 0]",
	}
	if strings.Join(markers, "|") != strings.Join(want, "|") {
		t.Errorf("markers %q, want %q", markers, want)
	}
	if !strings.HasPrefix(trSeq(1, 100000, "\r\n"), string(out)) {
		t.Errorf("recorded part is not the start of the output")
	}
}
