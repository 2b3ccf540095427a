package proc

import (
	"os/exec"
	"strconv"
	"syscall"
	"testing"
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
