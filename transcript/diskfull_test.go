package transcript

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDiskFullLeavesWholeLines: a write the disk takes only in part (the disk fills, or
// a file size limit is reached, in the middle of a buffer of events) leaves no event cut
// short in the .cast: the file ends with whole events, then, where the room freed
// allows, the marker that says recording stopped. A cut line would make the file
// invalid for asciinema and for every reader of the format.
//
// The limit is RLIMIT_FSIZE, set in a child process (this test binary run again) so
// that no other test's file is limited: a write across it is short, the next fails
// with EFBIG, as a disk that fills does with ENOSPC.
func TestDiskFullLeavesWholeLines(t *testing.T) {
	if dir := os.Getenv("PTYHUB_TEST_FSIZE_DIR"); dir != "" {
		lim := syscall.Rlimit{Cur: 100_003, Max: 100_003}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
		w, err := Create(dir, "0190-test", Header{Width: 80, Height: 24}, t0, Options{Spill: true})
		if err != nil {
			t.Fatal(err)
		}
		line := []byte(strings.Repeat("some output of the flood ", 40) + "\r\n")
		off := int64(0)
		for i := 0; i < 400 && w.Err() == nil; i++ {
			w.Output(at(i), off, line)
			off += int64(len(line))
		}
		w.Flush()
		if w.Err() == nil {
			t.Fatal("no write error past the file size limit")
		}
		w.Close(at(500), "exited with code 0")
		return
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "sessions")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskFullLeavesWholeLines$", "-test.v")
	cmd.Env = append(os.Environ(), "PTYHUB_TEST_FSIZE_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	path := Path(dir, "0190-test")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	evs := checkJSONLines(t, path) // fails at a line cut short
	last := evs[len(evs)-1]
	if last.Code != "m" || !strings.Contains(last.Data, "transcript write failed") {
		t.Errorf("the last event is %q %q, want the marker that recording stopped", last.Code, last.Data)
	}
	t.Logf("%d bytes, %d events, ending %q", fi.Size(), len(evs), last.Data)
}

// TestFollowEndsWithoutWriter: following a transcript that no writer holds any more and
// that has no end marker (its writer's process died, or a full disk stopped it before
// the marker) reads it to its end and stops, where it waited forever: `ptyhub logs -f`
// of such a session never returned. Not parallel: a child another test forks holds the
// writer's descriptor, and its lock, until its exec.
func TestFollowEndsWithoutWriter(t *testing.T) {
	w, _ := create(t, Options{})
	w.Output(at(1), 0, []byte("before the crash\r\n"))
	w.Flush()
	w.f.Close() // as a crash does: the lock goes, no end marker is written
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rc, err := Output(ctx, w.Path(), OutputOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil || string(b) != "before the crash\r\n" {
		t.Fatalf("follow read %q, %v; want the output, then the end", b, err)
	}
}
