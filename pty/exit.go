package pty

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExitStatus is how a process ended: an exit code, or a signal. 128+N is never used for
// signals; it is only a display convention of shells.
type ExitStatus struct {
	Code       int            // exit code; -1 when a signal ended the process
	Signal     syscall.Signal // 0 unless a signal ended the process
	CoreDumped bool
}

// DecodeWaitStatus turns a raw wait(2) status of a process that ended into an ExitStatus.
func DecodeWaitStatus(ws syscall.WaitStatus) ExitStatus {
	if ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal(), CoreDumped: ws.CoreDump()}
	}
	return ExitStatus{Code: ws.ExitStatus()}
}

// SignalName returns e.g. "SIGTERM", or "" when no signal ended the process.
func (e ExitStatus) SignalName() string {
	if e.Signal == 0 {
		return ""
	}
	return SignalName(e.Signal)
}

func (e ExitStatus) String() string {
	if e.Signal != 0 {
		s := "killed by signal " + e.SignalName()
		if e.CoreDumped {
			s += " (core dumped)"
		}
		return s
	}
	return "exited with code " + strconv.Itoa(e.Code)
}

// SignalName returns the conventional name of sig, e.g. "SIGKILL".
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// ParseSignal accepts "TERM", "SIGTERM", "sigterm" or "15".
func ParseSignal(s string) (syscall.Signal, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("empty signal name")
	}
	if n, err := strconv.Atoi(t); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("signal number %d out of range 1-64", n)
		}
		return syscall.Signal(n), nil
	}
	if !strings.HasPrefix(t, "SIG") {
		t = "SIG" + t
	}
	if sig := unix.SignalNum(t); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q (use a name such as INT, TERM, KILL, HUP, QUIT, USR1)", s)
}
