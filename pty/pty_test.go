package pty

import (
	"testing"
	"time"
)

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
