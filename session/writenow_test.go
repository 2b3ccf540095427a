package session

import (
	"bytes"
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// startCat starts `cat` on a terminal in raw mode with echo off, after it printed ready:
// what it reads comes back as it was typed.
func startCat(t *testing.T) (*Client, *Session, string) {
	t.Helper()
	m, err := NewManager(Options{NoRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c := m.NewClient("t")
	y := int64(20_000)
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: "stty raw -echo; echo ready; exec cat", WaitFor: "ready", YieldTimeMs: &y})
	if err != nil || r.State != StateRunning {
		t.Fatalf("exec: %v %+v", err, r)
	}
	s, err := c.lookup(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	return c, s, r.SessionID
}

// TestWriteWithNothingQueuedIsDoneByTheCaller: input to a terminal session with nothing
// queued and no writer running is written by the caller itself: done when enqueue
// returns, with no writer goroutine left (one processor, so a writer goroutine could
// not have run meanwhile).
func TestWriteWithNothingQueuedIsDoneByTheCaller(t *testing.T) {
	c, s, id := startCat(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	job, err := s.enqueue([]byte("hello\r"), false)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-job.done:
		if err != nil {
			t.Fatalf("write: %v", err)
		}
	default:
		t.Fatal("the input was left to a writer goroutine: not written when enqueue returned")
	}
	s.qmu.Lock()
	on := s.writerOn
	s.qmu.Unlock()
	if on {
		t.Error("a writer is still marked running after the caller wrote the input")
	}
	runtime.GOMAXPROCS(2)
	y := int64(20_000)
	r, err := c.Write(context.Background(), WriteRequest{SessionID: id, WaitFor: "hello", YieldTimeMs: &y})
	if err != nil || r.ReturnedBecause != BecausePattern {
		t.Fatalf("cat did not give the input back: %v %+v", err, r)
	}
}

// TestWriteQueueFullGoesOnInOrder: input the terminal cannot take at once (the program
// is stopped) is written in part by the caller and the rest by the writer once the
// program reads again; input typed meanwhile follows it. Nothing is lost or reordered.
func TestWriteQueueFullGoesOnInOrder(t *testing.T) {
	t.Parallel()
	_, s, _ := startCat(t)
	start := s.hub.End()
	if err := syscall.Kill(s.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("a"), 64<<10)
	first, err := s.enqueue(big, false)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-first.done:
		t.Fatalf("64 KiB went to a stopped program at once (err %v): the terminal took more than it holds", err)
	default:
	}
	second, err := s.enqueue([]byte("bbbb"), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(s.pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for _, j := range []*writeJob{first, second} {
		if err := <-j.done; err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	want := append(big, "bbbb"...)
	var got []byte
	buf := make([]byte, 32<<10)
	deadline := time.Now().Add(20 * time.Second) // a bound on a failure, not a pace
	for off := start; len(got) < len(want) && time.Now().Before(deadline); {
		wake := s.hub.Notify()
		n, missed, err := s.hub.ReadAt(buf, off)
		if missed > 0 || err != nil {
			t.Fatalf("reading the output: missed %d, %v", missed, err)
		}
		got = append(got, buf[:n]...)
		off += int64(n)
		if n == 0 {
			select {
			case <-wake:
			case <-time.After(time.Until(deadline)):
			}
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("cat gave back %d bytes (%q…), want the %d typed, in order", len(got), got[:min(len(got), 40)], len(want))
	}
}
