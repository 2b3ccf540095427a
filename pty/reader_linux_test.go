package pty

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// TestFileReaderPipeLockHeld: a non-blocking read of a pipe waits in the kernel for the
// pipe's lock while a writer holds it (a splice(2) from an empty socket into the pipe
// does, until the socket has data). A program without a terminal can do that to its
// output pipe; the session's reader must then block alone, not with its P — else the
// next stop of the world (a GC) waits for the program, and the whole server with it.
func TestFileReaderPipeLockHeld(t *testing.T) {
	fr, w := pipeFileReader(t)
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sp[0])
	// The socket's other end is held by a child alone: its end (killed below, or its
	// own after 30 s, should the world stay stopped) ends the splice.
	peer := os.NewFile(uintptr(sp[1]), "socket")
	holder := exec.Command(testtool.Path(t, "sleep"), "30")
	holder.ExtraFiles = []*os.File{peer}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	peer.Close()
	defer holder.Wait()
	defer holder.Process.Kill()

	// The writer: a splice from the empty socket into the pipe, holding the pipe's lock.
	spliced := make(chan error, 1)
	go func() {
		_, err := unix.Splice(sp[0], nil, int(w.Fd()), nil, 1, 0)
		spliced <- err
	}()
	waitSyscall(t, unix.SYS_SPLICE, sp[0])

	// The reader, in its read of the pipe.
	read := make(chan string, 1)
	go func() {
		var held atomic.Bool
		buf := make([]byte, 16)
		n, err := fr.ReadHold(buf, &held, nil)
		read <- fmt.Sprintf("%q %v", buf[:n], err)
	}()
	rfd := -1
	fr.rc.Control(func(fd uintptr) { rfd = int(fd) })
	if !waitSyscall(t, unix.SYS_READ, rfd) {
		t.Skip("this kernel does not make a pipe's read wait for a splice into it")
	}

	runtime.GC() // stops the world
	var ws unix.WaitStatus
	if pid, _ := unix.Wait4(holder.Process.Pid, &ws, unix.WNOHANG, nil); pid != 0 {
		t.Error("a GC could not stop the world until the splice into the pipe ended")
	}
	holder.Process.Kill()
	if err := <-spliced; err != nil {
		t.Errorf("splice: %v", err)
	}
	w.Close()
	if got := <-read; got != `"" EOF` {
		t.Errorf("read %s, want the end", got)
	}
}

// waitSyscall waits until a thread of this process is in system call nr on descriptor
// fd (its first argument), and reports whether one was; false once no thread is in a
// system call on fd for 200 consecutive looks (the call returned at once).
func waitSyscall(t *testing.T, nr uintptr, fd int) bool {
	t.Helper()
	want := strconv.FormatUint(uint64(nr), 10) + " 0x" + strconv.FormatUint(uint64(fd), 16) + " "
	for look := 0; look < 200; look++ {
		tasks, _ := filepath.Glob("/proc/self/task/*/syscall")
		for _, f := range tasks {
			if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), want) {
				return true
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}
