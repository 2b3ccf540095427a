package transcript

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/pty"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func create(t *testing.T, o Options) (*Writer, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions")
	w, err := Create(dir, "0190-test", Header{Width: 80, Height: 24, Command: "cmd", Env: map[string]string{"TERM": "xterm-256color"}}, t0, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Release)
	return w, dir
}

// checkJSONLines checks that the file is a header object then [time, code, data]
// arrays with non-decreasing times and valid UTF-8, and returns the events.
func checkJSONLines(t *testing.T, path string) []Event {
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
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil || h["version"] != float64(2) {
		t.Fatalf("header %q: %v", lines[0], err)
	}
	var evs []Event
	last := 0.0
	for i, l := range lines[1:] {
		var arr []any
		if err := json.Unmarshal([]byte(l), &arr); err != nil || len(arr) != 3 {
			t.Fatalf("line %d %q is not an event: %v", i+2, l, err)
		}
		tm, ok1 := arr[0].(float64)
		code, ok2 := arr[1].(string)
		d, ok3 := arr[2].(string)
		if !ok1 || !ok2 || !ok3 || !strings.Contains("oirm", code) || len(code) != 1 {
			t.Fatalf("line %d %q: bad event", i+2, l)
		}
		if tm < last {
			t.Errorf("line %d: time %v goes back from %v", i+2, tm, last)
		}
		last = tm
		evs = append(evs, Event{tm, code, d})
	}
	return evs
}

// asciinemaCat runs `asciinema cat path` on a pseudo-terminal (it opens /dev/tty) and
// returns what it printed. Without asciinema the test is skipped, or fails under CI=true.
func asciinemaCat(t *testing.T, path string) string {
	t.Helper()
	bin, err := exec.LookPath("asciinema")
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
	cmd := exec.Command(bin, "cat", path)
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

func TestWriterEvents(t *testing.T) {
	t.Parallel()
	w, dir := create(t, Options{Spill: true})
	euro := []byte("€") // e2 82 ac
	w.Output(at(1), 0, append([]byte("price "), euro[:2]...))
	w.Output(at(2), 8, append(euro[2:], []byte(" ok\r\n")...))
	w.Input(at(3), []byte("ls\r"))
	w.Hidden(at(4), 8)
	w.Resize(at(5), 100, 30)
	bad := []byte("bad \xff byte \x1b[1m\"q\"\\\r\n")
	gap := int64(14 + len(bad))
	w.Output(at(6), 14, bad)
	w.Output(at(7), gap+10, []byte("after gap\r\n")) // 10 bytes never reached the writer
	if err := w.Close(at(8), "exited with code 0"); err != nil {
		t.Fatal(err)
	}
	evs := checkJSONLines(t, w.Path())
	want := []Event{
		{0.001, "o", "price "},
		{0.002, "o", "€ ok\r\n"},
		{0.003, "i", "ls\r"},
		{0.004, "m", "[8 bytes of hidden input]"},
		{0.005, "r", "100x30"},
		{0.006, "o", "bad \ufffd byte \x1b[1m\"q\"\\\r\n"},
		{0.007, "m", "[10 bytes of output lost: the transcript fell behind]"},
		{0.007, "o", "after gap\r\n"},
		{0.008, "m", "[session ended: exited with code 0]"},
	}
	if len(evs) != len(want) {
		t.Fatalf("events:\n%+v\nwant\n%+v", evs, want)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, evs[i], want[i])
		}
	}
	// ReadAt reads the exact bytes (the .cast's, the spill's for the invalid byte), the
	// lost range reads as nothing.
	for _, c := range []struct {
		off  int64
		want string
	}{
		{0, "price €"},
		{6, "€ ok"},
		{14, "bad \xff byte"},
		{gap, ""},
		{gap + 10, "after gap"},
		{1 << 20, ""},
	} {
		p := make([]byte, len(c.want))
		if c.want == "" {
			p = make([]byte, 4)
		}
		if n := readFull(w, p, c.off); string(p[:n]) != c.want {
			t.Errorf("ReadAt(%d) = %q, want %q", c.off, p[:n], c.want)
		}
	}
	// Modes: directory 0700, files 0600.
	for _, p := range []string{dir, w.Path(), SpillPath(dir, "0190-test")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	w.Release()
	if _, err := os.Stat(SpillPath(dir, "0190-test")); !os.IsNotExist(err) {
		t.Errorf("spill still there after Release: %v", err)
	}
	if n := w.ReadAt(make([]byte, 4), 0); n != 0 {
		t.Errorf("ReadAt after Release read %d bytes", n)
	}
	out := asciinemaCat(t, w.Path())
	if !strings.Contains(out, "price € ok") || !strings.Contains(out, "after gap") {
		t.Errorf("asciinema cat printed %q", out)
	}
}

func TestSplitUTF8EveryOffset(t *testing.T) {
	t.Parallel()
	text := []byte("aé€😀\x1b[0mz€")
	for cut := 0; cut <= len(text); cut++ {
		for cut2 := cut; cut2 <= len(text); cut2++ {
			dir := t.TempDir()
			w, err := Create(dir, "s", Header{Width: 80, Height: 24}, t0, Options{})
			if err != nil {
				t.Fatal(err)
			}
			w.Output(at(1), 0, text[:cut])
			w.Output(at(2), int64(cut), text[cut:cut2])
			w.Output(at(3), int64(cut2), text[cut2:])
			w.Close(at(4), "x")
			rc, err := Output(context.Background(), w.Path(), OutputOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if !bytes.Equal(got, text) {
				t.Fatalf("cuts %d,%d: output %q, want %q", cut, cut2, got, text)
			}
		}
	}
}

func TestCap(t *testing.T) {
	t.Parallel()
	w, _ := create(t, Options{Cap: 1000, Spill: true})
	line := []byte(strings.Repeat("x", 99) + "\n")
	for i := range 50 {
		w.Output(at(i), int64(i*100), line)
	}
	w.Close(at(60), "exited with code 0")
	fi, _ := os.Stat(w.Path())
	if fi.Size() > 1000+400 { // the cap plus its markers
		t.Errorf("transcript is %d bytes, cap 1000", fi.Size())
	}
	evs := checkJSONLines(t, w.Path())
	var recorded int
	var markers []string
	for _, e := range evs {
		switch e.Code {
		case "o":
			recorded += len(e.Data)
		case "m":
			markers = append(markers, e.Data)
		}
	}
	want := []string{
		"[transcript cap of 1000 bytes reached: recording stopped]",
		"[" + itoa(5000-recorded) + " bytes of output were not recorded past the cap]",
		"[session ended: exited with code 0]",
	}
	if strings.Join(markers, "|") != strings.Join(want, "|") {
		t.Errorf("markers %q, want %q", markers, want)
	}
	if n := w.ReadAt(make([]byte, 10), 4000); n != 0 {
		t.Errorf("spill holds %d bytes past the cap", n)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestDiskError: a write error (here: the file swapped for /dev/full) stops the
// transcript and is reported by Err; nothing panics or blocks.
func TestDiskError(t *testing.T) {
	t.Parallel()
	w, _ := create(t, Options{})
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		testtool.Missing(t, "no /dev/full: "+err.Error())
	}
	w.f.Close()
	w.f = full
	w.Output(at(1), 0, []byte("some output that does not fit"))
	w.Flush()
	if w.Err() == nil || !strings.Contains(w.Err().Error(), "no space") {
		t.Fatalf("Err() = %v, want no space left", w.Err())
	}
	w.Output(at(2), 29, []byte("more"))
	w.Input(at(3), []byte("in"))
	if err := w.Close(at(4), "x"); err == nil {
		t.Error("Close after a disk error returned nil")
	}
}

func TestDirChecks(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o755)
	link := filepath.Join(base, "link")
	os.Symlink(real, link)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	if err := EnsureDir(link); err == nil {
		t.Error("EnsureDir accepted a symlink")
	}
	if err := EnsureDir(file); err == nil {
		t.Error("EnsureDir accepted a file")
	}
	if err := EnsureDir(real); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o700 {
		t.Errorf("loose directory left %v", fi.Mode().Perm())
	}
	// A missing directory is made (with its parents), 0700; a dangling symlink is not
	// followed to make one.
	missing := filepath.Join(base, "a", "b")
	if err := EnsureDir(missing); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(missing); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("missing directory made as %v (%v), want a directory 0700", fi, err)
	}
	dangling := filepath.Join(base, "dangling")
	os.Symlink(filepath.Join(base, "nowhere"), dangling)
	if err := EnsureDir(dangling); err == nil {
		t.Error("EnsureDir accepted a dangling symlink")
	}
	if _, err := os.Lstat(filepath.Join(base, "nowhere")); err == nil {
		t.Error("EnsureDir made a dangling symlink's target")
	}
	// An existing file (or a planted symlink) is never opened.
	os.Symlink("/etc/passwd", filepath.Join(real, "planted"+Ext))
	if _, err := Create(real, "planted", Header{}, t0, Options{}); err == nil {
		t.Error("Create followed a planted symlink")
	}
	if _, err := Create(real, "../escape", Header{}, t0, Options{}); err == nil {
		t.Error("Create accepted a path in the id")
	}
}

// Not parallel: a child forked by another test (asciinemaCat) briefly holds every open fd
// until its exec, and with it the writer's flock, which would make Live flap.
func TestOutputListFollow(t *testing.T) {
	w, dir := create(t, Options{})
	w.Output(at(1), 0, []byte("\x1b[31mred\x1b[0m\r\n10%\r100%\r\n"))
	w.Hidden(at(2), 3)
	w.Flush()

	in, err := Find(dir, "0190")
	if err != nil || !in.Live || in.Ended != "" || in.Header.Command != "cmd" {
		t.Errorf("Find live = %+v, %v", in, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := Output(ctx, w.Path(), OutputOptions{Follow: true, Text: true, Markers: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	br := bufio.NewReader(rc)
	for _, want := range []string{"red\n", "100%\n", "[3 bytes of hidden input]\n"} {
		got, err := br.ReadString('\n')
		if got != want || err != nil {
			t.Fatalf("follow read %q, %v; want %q", got, err, want)
		}
	}
	w.Output(at(3), 24, []byte("bye\r\n"))
	w.Close(at(4), "killed by signal SIGTERM")
	rest, err := io.ReadAll(br)
	if string(rest) != "bye\n[session ended: killed by signal SIGTERM]\n" || err != nil {
		t.Errorf("follow rest %q, %v", rest, err)
	}

	raw, _ := Output(ctx, w.Path(), OutputOptions{})
	b, _ := io.ReadAll(raw)
	raw.Close()
	if string(b) != "\x1b[31mred\x1b[0m\r\n10%\r100%\r\nbye\r\n" {
		t.Errorf("raw output %q", b)
	}
	list, err := List(dir)
	if err != nil || len(list) != 1 || list[0].Live || list[0].Ended != "killed by signal SIGTERM" {
		t.Errorf("List = %+v, %v", list, err)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	mk := func(name string, size int, age time.Duration) {
		p := filepath.Join(dir, name)
		os.WriteFile(p, make([]byte, size), 0o600)
		os.Chtimes(p, now.Add(-age), now.Add(-age))
	}
	mk("old"+Ext, 10, 8*24*time.Hour)
	mk("a"+Ext, 400, 3*time.Hour)
	mk("b"+Ext, 400, 2*time.Hour)
	mk("c"+Ext, 400, time.Hour)
	mk("fresh"+Ext, 5000, time.Second) // too new to prune even over the size limit
	mk("orphan"+SpillExt, 10, time.Hour)
	mk("notes.txt", 10, 30*24*time.Hour)
	live, err := Create(dir, "live", Header{}, now, Options{Spill: true})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	live.Output(now, 0, []byte("\xff")) // not UTF-8: creates the spill
	p := live.Path()
	os.Chtimes(p, now.Add(-30*24*time.Hour), now.Add(-30*24*time.Hour))

	removed, err := Prune(dir, 7*24*time.Hour, 5900, now)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range removed {
		names = append(names, filepath.Base(r))
	}
	// old: by age; a: oldest while over 5,900 bytes; orphan spill; never live or fresh.
	want := "orphan.raw old.cast a.cast"
	if strings.Join(names, " ") != want {
		t.Errorf("removed %q, want %q", names, want)
	}
	for _, keep := range []string{"b" + Ext, "c" + Ext, "fresh" + Ext, "live" + Ext, "live" + SpillExt, "notes.txt"} {
		if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
			t.Errorf("%s was removed", keep)
		}
	}
}

// TestDelayedSpill: output that is valid UTF-8 never creates a spill file, and ReadAt
// reads every byte of it back from the .cast. With SpillAfter, output whose invalid
// bytes all stay below it creates none either (the session holds no fd for it; those
// ranges read as nothing, the hub has them); once the output passes it, the spill is
// created and the ranges before are written from Backfill, so ReadAt finds every byte;
// what Backfill no longer has is a gap.
func TestDelayedSpill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var valid, mixed []byte // the output as the ring would hold it
	for i := range 3000 {
		valid = fmt.Appendf(valid, "line %d é\n", i)
		if i%500 == 3 {
			mixed = fmt.Appendf(mixed, "bad \xff\xfe %d\n", i)
		} else {
			mixed = fmt.Appendf(mixed, "line %d é\n", i)
		}
	}
	badAt := int64(bytes.IndexByte(mixed, 0xff))
	for _, tc := range []struct {
		name   string
		out    []byte
		upTo   int  // output written
		forget int  // bytes the backfill no longer has
		spill  bool // a spill file is expected
	}{
		{"valid small", valid, bytes.IndexByte(valid[1000:], '\n') + 1001, 0, false},
		{"valid past the threshold", valid, len(valid), 0, false},
		{"invalid small", mixed, 1000, 0, false},
		{"invalid past the threshold", mixed, len(mixed), 0, true},
		{"backfill lost the start", mixed, len(mixed), 500, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.out
			id := "0190-" + strings.ReplaceAll(tc.name, " ", "-")
			backfill := func(p []byte, off int64) (int, int64) { // a ring that lost its start
				missed := max(0, int64(tc.forget)-off)
				return copy(p, out[off+missed:]), missed
			}
			w, err := Create(dir, id, Header{Width: 80, Height: 24}, t0, Options{Spill: true, SpillAfter: 4096, Backfill: backfill})
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off < tc.upTo; off += 700 {
				w.Output(t0, int64(off), out[off:min(off+700, tc.upTo)])
			}
			_, err = os.Stat(SpillPath(dir, id))
			if exists := err == nil; exists != tc.spill {
				t.Fatalf("spill file exists: %v, want %v", exists, tc.spill)
			}
			w.Close(t0, "done")
			p := make([]byte, 100)
			for _, off := range []int64{0, badAt - 5, badAt, 600, 5000, int64(tc.upTo) - 100} {
				if off >= int64(tc.upTo) {
					continue
				}
				n := readFull(w, p, off)
				want := out[off:min(off+100, int64(tc.upTo))]
				// The spill holds whole events (here: the 700-byte chunk with the
				// invalid bytes); without the spill's file, or with the backfill's
				// loss, that chunk is in no file (the hub has it).
				mayMiss := &tc.out[0] == &mixed[0] && off < 700 &&
					(!tc.spill || tc.forget > 0)
				if !bytes.Equal(p[:n], want[:n]) || (n < len(want) && !mayMiss) {
					t.Errorf("ReadAt(%d) = %q, want %q", off, p[:n], want)
				}
			}
			w.Release()
			if _, err := os.Stat(SpillPath(dir, id)); err == nil {
				t.Error("spill left after Release")
			}
			if n := w.ReadAt(p, 0); n != 0 {
				t.Errorf("ReadAt after Release = %d bytes", n)
			}
		})
	}
}

// readFull reads p at off through as many ReadAt calls as it takes (each serves one
// file), and returns how many bytes it got before the first that none has.
func readFull(w *Writer, p []byte, off int64) int {
	n := 0
	for n < len(p) {
		k := w.ReadAt(p[n:], off+int64(n))
		if k == 0 {
			break
		}
		n += k
	}
	return n
}

// TestReadAtFromCast: output fed in chunks of every size, with characters split
// between chunks, escapes and bytes that are not UTF-8, reads back byte for byte from
// any offset, before Close (once flushed) and after; only ranges with invalid bytes go
// to the spill, and the index stays sparse.
func TestReadAtFromCast(t *testing.T) {
	t.Parallel()
	w, dir := create(t, Options{Spill: true})
	rng := rand.New(rand.NewPCG(8, 9))
	pieces := []string{"plain text ", "é", "€", "😀", "\r\n", "\t", "\x1b[31m", "\"", "\\", "\x00", "\ufffd", strings.Repeat("y", 300)}
	var out []byte
	for len(out) < 1<<20 {
		out = append(out, pieces[rng.IntN(len(pieces))]...)
		if rng.IntN(2000) == 0 {
			out = append(out, "\xff\xc3"[:1+rng.IntN(2)]...)
		}
	}
	for off := 0; off < len(out); {
		n := min(len(out)-off, 1+rng.IntN(9000))
		w.Output(t0, int64(off), out[off:off+n])
		off += n
	}
	check := func(when string) {
		p := make([]byte, 5000)
		for range 2000 {
			off := rng.Int64N(int64(len(out)))
			want := out[off:min(int64(len(out)), off+int64(1+rng.IntN(len(p))))]
			if n := readFull(w, p[:len(want)], off); !bytes.Equal(p[:n], want) {
				t.Fatalf("%s: ReadAt(%d) = %d bytes, want %d (first difference at %d)", when, off, n, len(want), firstDiff(p[:n], want))
			}
		}
	}
	w.Flush()
	check("before Close")
	w.smu.RLock()
	spilled := int64(0)
	for _, r := range w.spilled {
		spilled += r[1] - r[0]
	}
	entries := len(w.idx)
	w.smu.RUnlock()
	if bad := bytes.Count([]byte(strings.ToValidUTF8(string(out), "\x01\x02")), []byte("\x01\x02")); bad == 0 || spilled > int64(bad)*2*spillJoin {
		t.Errorf("%d bytes spilled for %d runs of invalid bytes", spilled, bad)
	}
	if entries > len(out)/indexEvery+2 {
		t.Errorf("%d index entries for %d bytes of output", entries, len(out))
	}
	w.Close(t0, "done")
	check("after Close")
	if fi, err := os.Stat(SpillPath(dir, "0190-test")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("spill: %v", err)
	}
}

// TestNoSpillForText: output that is all valid UTF-8 creates no raw spill; ReadAt reads
// it from the .cast.
func TestNoSpillForText(t *testing.T) {
	t.Parallel()
	w, dir := create(t, Options{Spill: true})
	out := bytes.Repeat([]byte("text é€ \x1b[1m\r\n"), 100000)
	for off := 0; off < len(out); off += 4093 {
		w.Output(t0, int64(off), out[off:min(off+4093, len(out))])
	}
	w.Close(t0, "done")
	if _, err := os.Stat(SpillPath(dir, "0190-test")); !os.IsNotExist(err) {
		t.Errorf("a spill for valid UTF-8 output: %v", err)
	}
	p := make([]byte, 10000)
	if n := readFull(w, p, 777777); !bytes.Equal(p[:n], out[777777:777777+10000]) {
		t.Errorf("ReadAt(777777) = %d bytes, not the output", n)
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

// TestSpillOneRangeForBinary: output that is not text, cut into events of any size,
// makes one spilled range (the writer's memory of the spill stays one entry), and reads
// back exactly.
func TestSpillOneRangeForBinary(t *testing.T) {
	t.Parallel()
	w, _ := create(t, Options{Spill: true})
	rng := rand.New(rand.NewPCG(1, 3))
	out := make([]byte, 4<<20)
	for i := range out {
		out[i] = byte(rng.Uint32())
	}
	for off := 0; off < len(out); {
		n := min(len(out)-off, 100+rng.IntN(9000))
		w.Output(t0, int64(off), out[off:off+n])
		off += n
	}
	w.Close(t0, "done")
	w.smu.RLock()
	ranges := len(w.spilled)
	w.smu.RUnlock()
	if ranges != 1 {
		t.Errorf("%d spilled ranges for one stream of binary output", ranges)
	}
	p := make([]byte, 100<<10)
	for _, off := range []int64{0, 12345, 3 << 20} {
		if n := readFull(w, p, off); !bytes.Equal(p[:n], out[off:off+int64(len(p))]) {
			t.Errorf("ReadAt(%d) = %d bytes, not the output", off, n)
		}
	}
}

// TestCarryNoCopy: a chunk that completes a character carried from the one before is
// encoded where it is: recording it allocates nothing (it used to copy the whole chunk
// after the carried bytes, and the carry itself), and the output reads back exactly.
func TestCarryNoCopy(t *testing.T) {
	w, _ := create(t, Options{Spill: true, Cap: 1 << 40})
	chunk := append(append([]byte("\x82\xac"), bytes.Repeat([]byte("x"), 1000)...), 0xe2) // … € …
	w.Output(t0, 0, []byte("\xe2"))
	off := int64(1)
	for range 10 { // warm the writer's buffers
		w.Output(t0, off, chunk)
		off += int64(len(chunk))
	}
	if a := testing.AllocsPerRun(100, func() {
		w.Output(t0, off, chunk)
		off += int64(len(chunk))
	}); a != 0 {
		t.Errorf("%v allocations per chunk", a)
	}
	w.Close(t0, "done")
	want := append([]byte("\xe2"), bytes.Repeat(chunk, int(off-1)/len(chunk))...)
	p := make([]byte, len(want)) // the last byte, never completed, from the spill
	if n := readFull(w, p, 0); !bytes.Equal(p[:n], want) {
		t.Errorf("read back %d bytes, not the output (first difference at %d)", n, firstDiff(p[:n], want))
	}
}

// TestSpillPathMadeWhenNeeded: a writer that can spill keeps no spill path of its own
// (most transcripts never spill; the string cost every session ~100 bytes): the path it
// makes when it needs one is SpillPath's, beside the transcript.
func TestSpillPathMadeWhenNeeded(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, "0190-spill", Header{Width: 80, Height: 24}, time.Now(), Options{Spill: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(time.Now(), "done")
	if got, want := w.spillPath(), SpillPath(dir, "0190-spill"); got != want {
		t.Fatalf("spill path %q, want %q", got, want)
	}
}
