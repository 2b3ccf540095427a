package proc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/pty"
)

func TestStatSelf(t *testing.T) {
	in, err := Stat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := unix.Getsid(0)
	if in.PID != os.Getpid() || in.PPID != os.Getppid() || in.Pgid != syscall.Getpgrp() || in.Sid != sid {
		t.Fatalf("Stat(self) = %+v; want pid %d ppid %d pgid %d sid %d", in, os.Getpid(), os.Getppid(), syscall.Getpgrp(), sid)
	}
	if in.Start == 0 || StartTime(os.Getpid()) != in.Start {
		t.Fatalf("start time %d, again %d", in.Start, StartTime(os.Getpid()))
	}
	if in.Dead() {
		t.Fatalf("self is dead: %c", in.State)
	}
	if !slices.ContainsFunc(List(), func(p Info) bool { return p.PID == in.PID && p.Start == in.Start }) {
		t.Fatal("List() misses this process")
	}
}

func TestChildFacts(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	cmd.Env = append(os.Environ(), "PTYHUB_PROC_TEST=x y=z")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The child execs sleep after fork: wait for the exec (its command line changes).
	for !strings.Contains(CommandLine(pid), "sleep 100") {
		runtime.Gosched()
	}
	in, err := Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if in.PPID != os.Getpid() || in.Sid != pid || in.Pgid != pid || in.TTY != 0 {
		t.Fatalf("Stat(child) = %+v", in)
	}
	if !slices.Contains(Children(os.Getpid()), pid) {
		t.Fatalf("Children(self) = %v, misses %d", Children(os.Getpid()), pid)
	}
	var tr Tree
	if !slices.Contains(tr.Children(os.Getpid()), pid) {
		t.Fatal("Tree.Children misses the child")
	}
	if v, ok := Getenv(pid, "PTYHUB_PROC_TEST"); !ok || v != "x y=z" {
		t.Fatalf("Getenv = %q, %v", v, ok)
	}
	if _, ok := Getenv(pid, "PTYHUB_PROC_TES"); ok {
		t.Fatal("Getenv matched a prefix of a key")
	}
	if _, ok, read := LookupEnv(pid, "PTYHUB_NOT_SET"); ok || !read {
		t.Fatalf("LookupEnv of an absent key: found %v, read %v (want false, true)", ok, read)
	}
	// Ended but not waited for: a zombie, which has no start time.
	cmd.Process.Kill()
	for {
		in, err := Stat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if in.Dead() {
			break
		}
		runtime.Gosched()
	}
	if StartTime(pid) != 0 {
		t.Fatal("a zombie has a start time")
	}
	// A zombie shows no environment: unreadable, not "without the key".
	if _, _, read := LookupEnv(pid, "PTYHUB_PROC_TEST"); read {
		t.Fatal("LookupEnv read a zombie's environment")
	}
	cmd.Wait()
	if _, err := Stat(pid); !errors.Is(err, ErrGone) {
		t.Fatalf("Stat of a reaped child: %v", err)
	}
}

func TestControllingTTY(t *testing.T) {
	m, tty, err := pty.Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cmd := exec.Command("sleep", "100")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	dev, err := m.PeerDevice()
	if err != nil {
		t.Fatal(err)
	}
	for {
		in, err := Stat(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if in.TTY == dev {
			break
		}
		if in.TTY != 0 {
			t.Fatalf("controlling terminal %#x, want %#x", in.TTY, dev)
		}
		runtime.Gosched()
	}
}

func TestThreadStates(t *testing.T) {
	s, ok := ThreadStates(os.Getpid())
	if runtime.GOOS != "linux" {
		if ok {
			t.Fatal("thread states where the OS has none")
		}
		return
	}
	if !ok || len(s) < 2 { // the Go runtime always runs several threads
		t.Fatalf("ThreadStates(self) = %q, %v", s, ok)
	}
}

// TestKill: a process that ignores SIGHUP and SIGTERM is ended by the escalation.
func TestKill(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap "" HUP TERM; echo ready; exec sleep 100`)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	p, err := Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	left := func() []Ref {
		if in, err := Stat(pid); err == nil && !in.Dead() {
			return []Ref{p.Ref()}
		}
		return nil
	}
	if !Kill([]Ref{p.Ref()}, left, 20*time.Millisecond) {
		t.Fatal("Kill gave up")
	}
	err = cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("ended with %v, want SIGKILL", err)
	}
}

func TestSplitArgs(t *testing.T) {
	// KERN_PROCARGS2: argc, exec path, padding, argv, environment.
	b := binary.NativeEndian.AppendUint32(nil, 2)
	b = append(b, "/bin/sleep\x00\x00\x00\x00sleep\x00100\x00A=1\x00PTYHUB_SESSION=u\x00\x00junk"...)
	argv, env := splitArgs(b, true)
	if joinArgs(argv) != "sleep 100" || len(env) != 2 || string(env[1]) != "PTYHUB_SESSION=u" {
		t.Fatalf("argv %q env %q", argv, env)
	}
	argv, _ = splitArgs([]byte("ls\x00-l\x00"), false)
	if joinArgs(argv) != "ls -l" {
		t.Fatalf("argv %q", argv)
	}
	if v, ok := lookupEnv([]byte("A=1\x00PTYHUB_SESSION=u\x00"), "PTYHUB_SESSION"); !ok || v != "u" {
		t.Fatalf("lookupEnv = %q, %v", v, ok)
	}
	if bsdState(3) != 'S' || bsdState(5) != 'Z' || bsdState(2) != 'R' || bsdState(4) != 'T' {
		t.Fatal("bsdState")
	}
}

// TestUsageAndDescendants: a child listening on a TCP port is found below this process,
// its port read from its sockets, and this process's own CPU time and memory are not
// zero.
func TestUsageAndDescendants(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process usage and ports are read on Linux only")
	}
	testtool.Need(t, "python3")
	cmd := exec.Command("python3", "-c", "import socket,sys\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen()\nprint(s.getsockname()[1], flush=True)\nsys.stdin.read()")
	in, out := testtool.StartPiped(t, cmd)
	defer func() { in.Close(); cmd.Wait() }()
	var port int
	if _, err := fmt.Fscan(out, &port); err != nil {
		t.Fatal(err)
	}
	pids := Descendants(os.Getpid(), 1000)
	if !slices.Contains(pids, cmd.Process.Pid) {
		t.Fatalf("Descendants(self) = %v, no child %d", pids, cmd.Process.Pid)
	}
	if got := Ports([]int{cmd.Process.Pid}, ListeningSockets()); !slices.Equal(got, []int{port}) {
		t.Errorf("Ports(child) = %v, want [%d]", got, port)
	}
	if cpu, rss := Usage([]int{os.Getpid()}); cpu <= 0 || rss <= 0 {
		t.Errorf("Usage(self) = %v, %d bytes; want both above zero", cpu, rss)
	}
	if SelfRSS() <= 0 {
		t.Error("SelfRSS() = 0")
	}
}

// FreeBSD's wait messages name what a sleeping thread waits for; the detector relies on
// these three groups.
func TestWaitKindOf(t *testing.T) {
	for msg, want := range map[string]WaitKind{"": WaitNone, "ttyin": WaitTTYRead, "select": WaitMultiplex,
		"poll": WaitMultiplex, "kqread": WaitMultiplex, "nanslp": WaitOther, "wait": WaitOther, "piperd": WaitOther} {
		if got := waitKindOf(msg); got != want {
			t.Errorf("%q: %v, want %v", msg, got, want)
		}
	}
}

// OpenFDs lists a descriptor while it is open and not once it is closed; Executable
// opens the binary this process runs.
func TestSelfFacts(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fd := int(w.Fd())
	if fds := OpenFDs(); !slices.Contains(fds, fd) {
		t.Errorf("OpenFDs() = %v, no open pipe %d", fds, fd)
	}
	r.Close()
	w.Close()
	if fds := OpenFDs(); slices.Contains(fds, fd) {
		t.Errorf("OpenFDs() = %v still lists the closed pipe %d", fds, fd)
	}

	want, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.Stat(Executable())
	if err != nil {
		t.Fatalf("Executable() = %q: %v", Executable(), err)
	}
	b, err := os.Stat(want)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(a, b) {
		t.Errorf("Executable() = %q is not this test binary %q", Executable(), want)
	}
	if ExecutableReplaced() {
		t.Errorf("ExecutableReplaced() = true for the test binary in place at %q", want)
	}
}
