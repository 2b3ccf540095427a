package proc

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReaderKeepReadsAgainThroughOneDescriptor: between Keep and Release a file read
// twice is opened once and read fresh each time (a thread's state changes between the
// reads); once its process is gone the kept descriptor fails, the file is opened afresh
// (and not found), and nothing stays open after Release.
func TestReaderKeepReadsAgainThroughOneDescriptor(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	path := "/proc/" + strconv.Itoa(pid) + "/stat"

	var r Reader
	r.Keep()
	if _, ok := r.Stat(pid); !ok {
		t.Fatal("cannot read the child's stat")
	}
	fd, kept := r.kept[path]
	if !kept {
		t.Fatal("the stat file was not kept open after Keep")
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	for {
		// Read again until the kept descriptor shows the stop: each read is fresh.
		in, ok := r.Stat(pid)
		if !ok {
			t.Fatal("the second read failed")
		}
		if in.State == 'T' {
			break
		}
	}
	if r.kept[path] != fd {
		t.Fatal("the second read opened the file again")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, ok := r.Stat(pid); ok {
		t.Fatal("a reaped process's stat was read through the kept descriptor")
	}
	if _, still := r.kept[path]; still {
		t.Error("the descriptor of a reaped process is still kept")
	}
	r.Release()
	if len(r.kept) != 0 {
		t.Errorf("%d descriptors kept after Release", len(r.kept))
	}
	r.Stat(1)
	if len(r.kept) != 0 {
		t.Error("a read after Release kept its descriptor")
	}
}

// pidfds counts this process's open pidfds.
func pidfds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l == "anon_inode:[pidfd]" {
			n++
		}
	}
	return n
}

// TestReaderKeepsThePidfd: between Keep and Release, copies of a process's fds go
// through one pidfd kept for it; without Keep none stays open. Once the process is
// reaped the kept pidfd is dropped (a copy fails, as for a pid never seen), and Release
// closes what is kept.
func TestReaderKeepsThePidfd(t *testing.T) {
	if !SyscallView {
		t.Skip("no copies of another process's fds on this build")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Fatal(err)
	}
	// Started with syscall.ForkExec, which (unlike os/exec) holds no pidfd of its own.
	pid, err := syscall.ForkExec(cat, []string{"cat"}, &syscall.ProcAttr{Files: []uintptr{r.Fd(), 2, 2}})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	reaped := false
	reap := func() {
		if !reaped {
			syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, 0, nil)
			reaped = true
		}
	}
	defer reap()
	before := pidfds(t)
	var pr Reader
	dup := func() {
		t.Helper()
		fd, err := pr.DupFD(pid, 0)
		if err != nil {
			t.Fatalf("DupFD(cat, 0): %v", err)
		}
		unix.Close(fd)
	}
	dup()
	if n := pidfds(t) - before; n != 0 {
		t.Fatalf("%d pidfds left open by a copy without Keep", n)
	}
	pr.Keep()
	dup()
	dup()
	if n := pidfds(t) - before; n != 1 {
		t.Fatalf("%d pidfds open after two copies from one process with Keep; want 1", n)
	}
	reap()
	if fd, err := pr.DupFD(pid, 0); err == nil {
		unix.Close(fd)
		t.Fatal("a copy of a reaped process's fd succeeded")
	}
	if n := pidfds(t) - before; n != 0 {
		t.Errorf("%d pidfds still open for a reaped process", n)
	}
	pr.Release()
	if n := pidfds(t) - before; n != 0 {
		t.Errorf("%d pidfds open after Release", n)
	}
}

// countFDs counts this process's open descriptors.
func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestReaderKeepsAtMostKeptMax: looks at every thread of a program with many threads keep
// no more than KeptMax descriptors open (a kept Reader per session at a prompt counts
// them in the server's descriptor budget), and every look still reads.
func TestReaderKeepsAtMostKeptMax(t *testing.T) {
	// Eight threads of this process, each locked to its goroutine until the test ends.
	stop := make(chan struct{})
	var started sync.WaitGroup
	for range 8 {
		started.Add(1)
		go func() {
			runtime.LockOSThread()
			started.Done()
			<-stop
			runtime.UnlockOSThread()
		}()
	}
	defer close(stop)
	started.Wait()
	pid := os.Getpid()
	in, ok := (&Reader{}).Stat(pid)
	if !ok || in.Threads < 9 {
		t.Fatalf("this process has %d threads, want at least 9", in.Threads)
	}
	before := countFDs(t)
	var r Reader
	r.Keep()
	defer r.Release()
	for range 2 {
		if _, ok := r.Stat(pid); !ok {
			t.Fatal("cannot read this process's stat")
		}
		tids := r.Tasks(pid, in.Threads)
		for _, tid := range tids {
			if _, ok := r.ThreadState(pid, tid); !ok {
				t.Fatalf("cannot read the state of thread %d", tid)
			}
			r.ThreadBlocked(pid, tid)
			r.ThreadRuntime(pid, tid)
		}
		r.AppendChildren(nil, pid, in.Threads)
	}
	if n := countFDs(t) - before; n > KeptMax {
		t.Fatalf("%d descriptors kept open after looks at %d threads; want at most %d", n, in.Threads, KeptMax)
	}
	if len(r.kept) == 0 {
		t.Fatal("no descriptor kept at all")
	}
	r.Release()
	if n := countFDs(t) - before; n > 0 {
		t.Fatalf("%d descriptors open after Release", n)
	}
}

// keptChildrenFDs counts this process's open descriptors of children files of pid.
func keptChildrenFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n, want := 0, "/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(pid)+"/children"
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l == want {
			n++
		}
	}
	return n
}

// TestReaderKeepsTheChildrenFile: between Keep and Release the children file of a
// thread without children stays open like the other files (a detector at a prompt reads
// it at every look), and each read through it is fresh: a child started later is seen.
// Once the thread is gone, its kept children file (which the kernel then reads as empty,
// as for a thread without children) is dropped at the next read, and Release closes what
// is kept.
func TestReaderKeepsTheChildrenFile(t *testing.T) {
	// sh waits for a line, then starts a child and waits for it.
	cmd := exec.Command("sh", "-c", "read line; sleep 1000 & wait")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	var r Reader
	r.Keep()
	defer r.Release()
	if kids := r.AppendChildren(nil, pid, 1); len(kids) != 0 {
		t.Fatalf("sh has children %v before its line", kids)
	}
	if n := keptChildrenFDs(t, pid); n != 1 {
		t.Fatalf("%d descriptors of sh's children file open after a read with Keep; want 1", n)
	}
	in.Write([]byte("go\n"))
	var kids []int
	for len(kids) == 0 {
		kids = r.AppendChildren(nil, pid, 1) // read again until sh has started sleep
	}
	defer syscall.Kill(kids[0], syscall.SIGKILL)
	if n := keptChildrenFDs(t, pid); n != 1 {
		t.Fatalf("%d descriptors of sh's children file open after reads through it; want 1", n)
	}
	syscall.Kill(kids[0], syscall.SIGKILL)
	cmd.Process.Kill()
	cmd.Wait()
	if kids := r.AppendChildren(nil, pid, 1); len(kids) != 0 {
		t.Fatalf("a reaped process has children %v", kids)
	}
	if n := keptChildrenFDs(t, pid); n != 0 {
		t.Errorf("%d descriptors of a reaped process's children file still open", n)
	}
	before := countFDs(t)
	r.AppendChildren(nil, os.Getpid(), 1)
	if countFDs(t) <= before {
		t.Fatal("no descriptor kept for this process's children file")
	}
	r.Release()
	if n := countFDs(t) - before; n != 0 {
		t.Errorf("%d descriptors open after Release", n)
	}
}

// TestLeaderStateFromProcessStat: the state of a process's leader thread is read from
// /proc/PID/stat, through the descriptor Stat keeps (no file of its own under task/),
// and it follows the thread: stopped, then sleeping again.
func TestLeaderStateFromProcessStat(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	var r Reader
	r.Keep()
	defer r.Release()
	if _, ok := r.Stat(pid); !ok {
		t.Fatal("cannot read the child's stat")
	}
	// waitState reads the leader's state until it is want.
	waitState := func(want byte) {
		t.Helper()
		for {
			st, ok := r.ThreadState(pid, pid)
			if !ok {
				t.Fatal("cannot read the leader's state")
			}
			if st == want {
				return
			}
			runtime.Gosched()
		}
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	waitState('T')
	cmd.Process.Signal(syscall.SIGCONT)
	waitState('S')
	if len(r.kept) != 1 {
		t.Errorf("kept %v; want only /proc/%d/stat", r.kept, pid)
	}
	if _, ok := r.kept["/proc/"+strconv.Itoa(pid)+"/stat"]; !ok {
		t.Errorf("kept %v; want /proc/%d/stat", r.kept, pid)
	}
}
