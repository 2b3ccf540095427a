package proc

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestThreadBlocked: a real cat blocked reading a pipe is seen in read(2) on fd 0, that
// fd is the very pipe, and a copy of it polls like the original. Without the kernel's
// view every answer is "cannot tell".
func TestThreadBlocked(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd := exec.Command("cat")
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	pid := cmd.Process.Pid
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var pr Reader
	if !SyscallView {
		if b := pr.ThreadBlocked(pid, pid); b.Call != CallUnknown {
			t.Fatalf("ThreadBlocked without the kernel's view = %+v", b)
		}
		if _, ok := pr.FDs(pid); ok {
			t.Fatal("FDs without the kernel's view")
		}
		return
	}
	// Until cat has exec'd and blocks, the thread runs or sleeps elsewhere.
	for pr.ThreadBlocked(pid, pid).Call != CallRead {
		runtime.Gosched()
	}
	if b := pr.ThreadBlocked(pid, pid); b.FD != 0 {
		t.Fatalf("cat blocked reading fd %d; want 0", b.FD)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(w.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if f := pr.FD(pid, 0); f.Kind != FDPipe || f.Dev != uint64(st.Dev) || f.Ino != uint64(st.Ino) {
		t.Fatalf("FD(cat, 0) = %+v; want the pipe %d/%d", f, st.Dev, st.Ino)
	}
	fds, ok := pr.FDs(pid)
	if !ok || len(fds) < 3 {
		t.Fatalf("FDs(cat) = %+v, %v", fds, ok)
	}
	if _, ok := pr.ThreadRuntime(pid, pid); !ok {
		t.Fatal("ThreadRuntime(cat) not readable")
	}
	dup, err := pr.DupFD(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dup)
	var dst unix.Stat_t
	if err := unix.Fstat(dup, &dst); err != nil || dst.Ino != st.Ino {
		t.Fatalf("DupFD(cat, 0): inode %d (%v); want %d", dst.Ino, err, st.Ino)
	}
}
