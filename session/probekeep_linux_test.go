//go:build linux

package session_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// procFilesOf maps each descriptor of this process open on a file of process pid's /proc
// directory to that file.
func procFilesOf(t *testing.T, pid string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "/proc/"+pid+"/") {
			files[e.Name()] = l
		}
	}
	return files
}

// TestProbeFilesKeptAtThePrompt: the /proc files the waiting-for-input detector read
// during a call that ended with the program waiting at its prompt stay open for the next
// call, which reads them again through the same descriptors; the call that sees the
// program exit closes them.
func TestProbeFilesKeptAtThePrompt(t *testing.T) {
	testtool.KernelOnly(t, "only the kernel's view of blocked threads reads /proc per thread")
	c := wClient(t)
	ctx := context.Background()
	r, err := c.Exec(ctx, session.ExecRequest{Cmd: "echo PID=$$; exec cat", YieldTimeMs: new(int64(20_000))})
	if err != nil {
		t.Fatal(err)
	}
	defer wKill(c, r)
	if r.ReturnedBecause != session.BecauseWaitingForInput {
		t.Fatalf("start: returned because %q, output %q", r.ReturnedBecause, r.Output)
	}
	m := regexp.MustCompile(`PID=(\d+)`).FindStringSubmatch(r.Output)
	if m == nil {
		t.Fatalf("no pid in %q", r.Output)
	}
	pid := m[1]
	first := procFilesOf(t, pid)
	if len(first) == 0 {
		t.Fatal("no /proc file of cat kept open after the call that found it waiting")
	}
	r, err = c.Write(ctx, session.WriteRequest{SessionID: r.SessionID, Chars: "hello\n", YieldTimeMs: new(int64(20_000))})
	if err != nil {
		t.Fatal(err)
	}
	if r.ReturnedBecause != session.BecauseWaitingForInput || !strings.Contains(r.Output, "hello\nhello\n") {
		t.Fatalf("turn: returned because %q with %q", r.ReturnedBecause, r.Output)
	}
	second := procFilesOf(t, pid)
	for fd, file := range first {
		if second[fd] != file {
			t.Errorf("%s (fd %s) was not read through the descriptor kept from the call before", file, fd)
		}
	}
	r, err = c.Write(ctx, session.WriteRequest{SessionID: r.SessionID, Chars: "\x04", YieldTimeMs: new(int64(20_000))})
	if err != nil {
		t.Fatal(err)
	}
	if r.ReturnedBecause != session.BecauseExit {
		t.Fatalf("^D: returned because %q with %q", r.ReturnedBecause, r.Output)
	}
	if left := procFilesOf(t, pid); len(left) != 0 {
		t.Errorf("%d /proc files of the exited cat still open: %v", len(left), left)
	}
}
