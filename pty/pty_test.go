package pty

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	creack "github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// modes runs a test on the netpoller master and on the poll fallback, forced here so that
// it is proven on a platform whose poller accepts the master.
func modes(t *testing.T, fn func(t *testing.T, m *Master, tty *os.File)) {
	for _, fb := range []bool{false, true} {
		name := "poller"
		if fb {
			name = "fallback"
		}
		t.Run(name, func(t *testing.T) {
			m, tty, err := open(24, 80, fb)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close(); tty.Close() })
			want := ModePoller
			if fb {
				want = ModeFallback
			}
			if m.Mode() != want {
				t.Fatalf("Mode() = %s, want %s", m.Mode(), want)
			}
			fn(t, m, tty)
		})
	}
}

// readResult runs one Read in a goroutine.
func readResult(m *Master, p []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := m.Read(p)
		done <- err
	}()
	return done
}

func TestOpenUsesPoller(t *testing.T) {
	m, tty, err := Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	defer m.Close()
	if m.Mode() != ModePoller {
		t.Fatalf("Mode() = %s on %s; the netpoller refused the master", m.Mode(), runtime.GOOS)
	}
}

func TestOutputRoundTrip(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		// The first bytes the master reads are the program's: Open's probe byte (if any)
		// was consumed.
		if _, err := tty.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		var got []byte
		buf := make([]byte, 64)
		for len(got) < 5 {
			n, err := m.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, buf[:n]...)
		}
		if string(got) != "hello" {
			t.Fatalf("read %q, want %q", got, "hello")
		}
	})
}

func TestInputRoundTrip(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		if _, err := m.Write([]byte("typed\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, err := tty.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if string(buf[:n]) != "typed\n" {
			t.Fatalf("slave read %q", buf[:n])
		}
	})
}

func TestReadDeadlineWakesBlockedRead(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		done := readResult(m, make([]byte, 16))
		// Nothing was written: the Read can only return through the deadline.
		if err := m.SetReadDeadline(time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read after deadline: %v, want os.ErrDeadlineExceeded", err)
		}
		// A future deadline ends a Read that would block forever.
		m.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if err := <-readResult(m, make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read with a future deadline: %v", err)
		}
		// Clearing it makes the master usable again.
		m.SetReadDeadline(time.Time{})
		tty.Write([]byte("x"))
		buf := make([]byte, 16)
		if n, err := m.Read(buf); err != nil || string(buf[:n]) != "x" {
			t.Fatalf("Read after clearing the deadline: %q, %v", buf[:n], err)
		}
	})
}

func TestCloseWakesBlockedRead(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		done := readResult(m, make([]byte, 16))
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != io.EOF {
			t.Fatalf("Read after Close: %v, want io.EOF", err)
		}
		if err := m.Close(); err == nil {
			t.Fatal("second Close succeeded")
		}
		if _, err := m.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("Read after Close: %v", err)
		}
		if _, _, err := m.Size(); err == nil {
			t.Fatal("Size after Close succeeded")
		}
	})
}

func TestCloseWakesBlockedWrite(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		// Nobody reads the slave: the input queue fills and Write blocks.
		done := make(chan error, 1)
		go func() {
			_, err := m.Write(bytes.Repeat([]byte("y"), 4<<20))
			done <- err
		}()
		m.Close()
		if err := <-done; err == nil {
			t.Fatal("a 4 MiB Write into an unread terminal succeeded")
		}
	})
}

func TestEOFAfterSlaveCloses(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		tty.Write([]byte("bye"))
		tty.Close()
		var got []byte
		buf := make([]byte, 64)
		for {
			n, err := m.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Read: %v (want buffered output, then io.EOF)", err)
			}
		}
		if string(got) != "bye" {
			t.Fatalf("read %q before EOF", got)
		}
	})
}

func TestReadHold(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		var held atomic.Bool
		idles := 0
		idle := checkedIdle(t, &held, &idles, nil)
		tty.Write([]byte("z"))
		buf := make([]byte, 16)
		n, err := m.ReadHold(buf, &held, idle)
		if err != nil || string(buf[:n]) != "z" {
			t.Fatalf("ReadHold: %q, %v", buf[:n], err)
		}
		if !held.Load() {
			t.Fatal("held is false while the caller holds the bytes")
		}
		held.Store(false)
		before := idles
		m.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := m.ReadHold(buf, &held, idle); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("ReadHold with nothing to read: %v", err)
		}
		if held.Load() {
			t.Fatal("held is true after a read that returned nothing")
		}
		if idles == before {
			t.Fatal("a read that found nothing did not call idle")
		}
	})
}

// TestReadHoldNoAllocs: the session reader calls ReadHold for every ~4 KiB of a flood; on
// the poller it allocates nothing.
func TestReadHoldNoAllocs(t *testing.T) {
	m, tty, err := open(24, 80, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { m.Close(); tty.Close() }()
	if m.Mode() != ModePoller {
		t.Fatalf("Mode() = %s, want %s", m.Mode(), ModePoller)
	}
	var held atomic.Bool
	buf := make([]byte, 16)
	one := []byte("z")
	idle := func() {}
	allocs := testing.AllocsPerRun(50, func() {
		tty.Write(one)
		if n, err := m.ReadHold(buf, &held, idle); n != 1 || err != nil {
			t.Fatalf("ReadHold: %d, %v", n, err)
		}
		held.Store(false)
	})
	if allocs != 0 {
		t.Fatalf("ReadHold allocated %v times per read", allocs)
	}
}

func TestSize(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		if r, c, err := m.Size(); err != nil || r != 24 || c != 80 {
			t.Fatalf("Size() = %d, %d, %v; want 24, 80", r, c, err)
		}
		if err := m.SetSize(50, 132); err != nil {
			t.Fatal(err)
		}
		// The slave sees the same size (through creack/pty on the slave).
		if r, c, err := creack.Getsize(tty); err != nil || r != 50 || c != 132 {
			t.Fatalf("slave size %d, %d, %v; want 50, 132", r, c, err)
		}
		if err := m.SetSize(0, 10); err == nil {
			t.Fatal("SetSize(0, 10) succeeded")
		}
		// The master stays non-blocking after creack/pty's Fd-based ioctls: a deadline
		// still ends a Read.
		m.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if err := <-readResult(m, make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read after SetSize: %v", err)
		}
	})
}

func TestAttrs(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		a, err := m.Attrs()
		if err != nil {
			t.Fatal(err)
		}
		if !a.Echo || !a.Canonical || !a.Signals || a.Intr != 3 || a.EOF != 4 {
			t.Fatalf("fresh terminal attrs %+v", a)
		}
		// A password prompt turns echo off on the slave; the master sees it.
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), ioctlGetTermios)
		if err != nil {
			t.Fatal(err)
		}
		tio.Lflag &^= unix.ECHO | unix.ICANON
		if err := unix.IoctlSetTermios(int(tty.Fd()), ioctlSetTermios, tio); err != nil {
			t.Fatal(err)
		}
		if a, err = m.Attrs(); err != nil || a.Echo || a.Canonical {
			t.Fatalf("attrs after echo off: %+v, %v", a, err)
		}
		if err := m.SetFlowControl(!a.IXON); err != nil {
			t.Fatal(err)
		}
		if b, err := m.Attrs(); err != nil || b.IXON == a.IXON {
			t.Fatalf("IXON %v after SetFlowControl(%v): %v", b.IXON, !a.IXON, err)
		}
	})
}

func TestForegroundPgrpAndSignal(t *testing.T) {
	// A test binary started with SIGINT ignored (a background job of a script) would pass
	// that on to cat, which would then never end. While the signal is notified it is
	// handled, not ignored, and exec gives cat the default disposition.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT)
	defer signal.Stop(sigs)
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		cmd := exec.Command("cat")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// The child is the foreground group once it has made the terminal its own.
		var pgrp int
		for {
			var err error
			if pgrp, err = m.ForegroundPgrp(); err != nil {
				t.Fatal(err)
			}
			if pgrp == cmd.Process.Pid {
				break
			}
			runtime.Gosched()
		}
		// TIOCSIG works even with ISIG off, where ^C would be plain input. (Linux accepts
		// only SIGINT, SIGQUIT and SIGTSTP.)
		tio, _ := unix.IoctlGetTermios(int(tty.Fd()), ioctlGetTermios)
		tio.Lflag &^= unix.ISIG
		unix.IoctlSetTermios(int(tty.Fd()), ioctlSetTermios, tio)
		if err := m.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("cat ended with %v", err)
		}
		if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGINT {
			t.Fatalf("cat ended with %v, want SIGINT", DecodeWaitStatus(ws))
		}
	})
}

func TestOutputPending(t *testing.T) {
	modes(t, func(t *testing.T, m *Master, tty *os.File) {
		if p, err := m.OutputPending(); err != nil || p {
			t.Fatalf("OutputPending on a quiet terminal: %v, %v", p, err)
		}
		tty.Write([]byte("q"))
		if p, err := m.OutputPending(); err != nil || !p {
			t.Fatalf("OutputPending after a write: %v, %v", p, err)
		}
		m.Read(make([]byte, 8))
		if p, err := m.OutputPending(); err != nil || p {
			t.Fatalf("OutputPending after the read: %v, %v", p, err)
		}
	})
}

func TestPeer(t *testing.T) {
	m, tty, err := Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	defer m.Close()
	name, _ := m.PeerName()
	if name != tty.Name() {
		t.Fatalf("PeerName %q, slave %q", name, tty.Name())
	}
	d, err := m.PeerDevice()
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(tty.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if uint64(st.Rdev) != d {
		t.Fatalf("PeerDevice %d, slave's st_rdev %d", d, st.Rdev)
	}
}

func BenchmarkOpen(b *testing.B) {
	for b.Loop() {
		m, tty, err := Open(24, 80)
		if err != nil {
			b.Fatal(err)
		}
		tty.Close()
		m.Close()
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	m, tty, err := Open(24, 80)
	if err != nil {
		b.Fatal(err)
	}
	defer tty.Close()
	defer m.Close()
	buf := make([]byte, 64)
	for b.Loop() {
		tty.Write([]byte("x"))
		if _, err := m.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCloseUnblocksRead: the master is non-blocking and on the netpoller, so Close from
// another goroutine wakes a blocked Read (creack/pty's blocking master would stay
// blocked and keep the fd open).
func TestCloseUnblocksRead(t *testing.T) {
	t.Parallel()
	m, slave, err := Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	done := make(chan error, 1)
	go func() {
		_, err := m.Read(make([]byte, 64))
		done <- err
	}()
	m.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Read after Close returned no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not wake the blocked Read")
	}
}

// TestFlowControl: SetFlowControl switches IXON, and Attrs reports it.
func TestFlowControl(t *testing.T) {
	t.Parallel()
	m, slave, err := Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer slave.Close()
	for _, on := range []bool{false, true, false} {
		if err := m.SetFlowControl(on); err != nil {
			t.Fatal(err)
		}
		if a, err := m.Attrs(); err != nil || a.IXON != on || a.Stop != 0x13 || a.Start != 0x11 {
			t.Errorf("after SetFlowControl(%v): %+v %v", on, a, err)
		}
	}
}
