package proc

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReaderScratchSmall: a Reader that has read a stat file keeps a 512-byte scratch
// buffer (a Reader is kept per session, idle or not), and still reads a file longer
// than that whole (/proc/self/limits, ~1.3 KiB and fixed while the test runs).
func TestReaderScratchSmall(t *testing.T) {
	var r Reader
	if _, ok := r.Stat(os.Getpid()); !ok {
		t.Fatal("cannot read /proc/self/stat")
	}
	if len(r.buf) != 512 {
		t.Errorf("after a stat file the scratch buffer is %d bytes, want 512", len(r.buf))
	}
	want, err := os.ReadFile("/proc/self/limits")
	if err != nil || len(want) <= 512 || len(want) > 4096 {
		t.Fatalf("/proc/self/limits: %d bytes, %v", len(want), err)
	}
	got, ok := r.read("/proc/self/limits")
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("read /proc/self/limits: %d bytes, want %d", len(got), len(want))
	}
}

// TestParseStatNoAlloc: a stat line (a comm holding spaces and parentheses) parses to
// its fields without allocating (the waiting-for-input probe parses one per process on
// each check), and numbers parse as strconv does.
func TestParseStatNoAlloc(t *testing.T) {
	line := []byte("4242 (a (b) c) S 17 4242 4240 34817 4242 4194560 100 0 0 0 7 3 0 0 20 0 2 0 5555 1000 200 18446744073709551615\n")
	in, ok := parseStat(4242, line)
	if !ok || in.State != 'S' || in.PPID != 17 || in.Pgid != 4242 || in.Sid != 4240 || in.Threads != 2 ||
		in.Start != 5555 || in.CPU != 10 || in.TTY == 0 {
		t.Fatalf("parseStat = %+v, %v", in, ok)
	}
	if n := testing.AllocsPerRun(100, func() { parseStat(4242, line) }); n != 0 {
		t.Errorf("parseStat allocates %v times", n)
	}
	if _, ok := parseStat(1, []byte("1 (x) S 1 2 3")); ok {
		t.Error("a short stat line parsed")
	}
	for _, s := range []string{"0", "18446744073709551615", "18446744073709551616", "", "-1", "12a", "7fffffffffffffff", "ffffffffffffffff", "1ffffffffffffffff", "DEADbeef"} {
		for _, base := range []uint64{10, 16} {
			want, err := strconv.ParseUint(s, int(base), 64)
			got, ok := parseUint([]byte(s), base)
			if ok != (err == nil) || ok && got != want {
				t.Errorf("parseUint(%q, %d) = %d, %v; strconv: %d, %v", s, base, got, ok, want, err)
			}
		}
	}
}

// readFile reads a /proc file past its first buffer whole, as os.ReadFile does, and
// says a missing file does not exist.
func TestReadFileWhole(t *testing.T) {
	for _, path := range []string{"/proc/self/environ", "/proc/self/maps", "/proc/self/stat"} {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		// maps and stat change between two reads (stat's state too, after the name);
		// their first 15 bytes do not.
		if path == "/proc/self/environ" && !bytes.Equal(got, want) || len(got) < 15 || !bytes.Equal(got[:15], want[:15]) {
			t.Errorf("%s: read %d bytes %.40q, os.ReadFile %d bytes %.40q", path, len(got), got, len(want), want)
		}
	}
	if _, err := readFile("/proc/self/no-such-file"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: err %v, want one that is fs.ErrNotExist", err)
	}
}

// TestExitStatusOfZombie: the exit status of a child that exited and is not reaped is
// read from its stat file (exit code 3, and a kill by a signal), and the exit path's
// reads of one process (its exit status, its start, a thread's children) allocate only
// the file's name, not its contents or a list of its fields.
func TestExitStatusOfZombie(t *testing.T) {
	zombie := func(args ...string) int {
		t.Helper()
		p, err := os.StartProcess("/bin/sh", append([]string{"sh", "-c"}, args...), &os.ProcAttr{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Wait() })
		// Until it has exited, without reaping it.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				if err != nil {
					t.Fatal(err)
				}
				return p.Pid
			}
		}
	}
	pid := zombie("exit 3")
	if ws, ok := ExitStatus(pid); !ok || !ws.Exited() || ws.ExitStatus() != 3 {
		t.Errorf("ExitStatus of a zombie that exited with 3: %v, %v", ws, ok)
	}
	killed := zombie("kill -KILL $$")
	if ws, ok := ExitStatus(killed); !ok || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Errorf("ExitStatus of a zombie killed by SIGKILL: %v, %v", ws, ok)
	}
	if _, ok := ExitStatus(os.Getpid()); ok {
		t.Error("ExitStatus of a live process said it exited")
	}
	// The name "/proc/N/stat" and its C copy for open(2): under 100 bytes, against the
	// 512 of a buffer for the file's contents.
	if raceOn {
		return
	}
	perCall := func(f func()) uint64 {
		var before, after runtime.MemStats
		f()
		runtime.ReadMemStats(&before)
		for range 100 {
			f()
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 100
	}
	if n := perCall(func() { ExitStatus(pid) }); n > 200 {
		t.Errorf("ExitStatus allocates %d bytes a call, want at most 200", n)
	}
	if n := perCall(func() { StartTime(pid) }); n > 200 {
		t.Errorf("StartTime allocates %d bytes a call, want at most 200", n)
	}
}

// TestLookupEnvFinal: a kernel thread's environment (it has none) is read once and for
// all, so a sweep does not wait for it to show one; a process of ours started with an
// empty environment is not (it may be inside an exec).
func TestLookupEnvFinal(t *testing.T) {
	kthread := 0
	for _, p := range List() {
		if p.PID == 2 || p.PPID == 2 {
			kthread = p.PID
			break
		}
	}
	if kthread == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("no kernel thread in the process table (pid 2 and its children)")
		}
		t.Skip("no kernel thread visible (a pid namespace?)")
	}
	if _, _, read := LookupEnv(kthread, "PATH"); !read {
		t.Errorf("kernel thread %d (%s) is not read as final", kthread, CommandLine(kthread))
	}

	// A process inside an exec shows an empty environment and its stat's env_end is 0
	// (the new image's is set last): not final. Once set, an empty one is (env -i: see
	// TestEmptyEnvironmentIsFinal). The window of an exec cannot be held open from here:
	// the stat's reading is checked on the lines of a process inside an exec and after.
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(self[bytes.LastIndexByte(self, ')')+2:]))
	if len(f) < 49 {
		t.Skipf("a stat without env_end (%d fields from the state on)", len(f))
	}
	if _, set := statImageState(self); !set {
		t.Fatalf("statImageState(/proc/self/stat) = not set; env_end %s", f[48])
	}
	f[48] = "0" // as inside an exec
	mid := []byte(string(self[:bytes.LastIndexByte(self, ')')+2]) + strings.Join(f, " ") + "\n")
	if kthread, set := statImageState(mid); kthread || set {
		t.Fatalf("statImageState with env_end 0 = %v, %v (want false, false)", kthread, set)
	}
}

// TestEmptyEnvironmentIsFinal: a process whose environment is really empty (`env -i`)
// is read once for good (read true, no entry), not taken for one inside an exec (read
// false), which the sweeps read again for up to 100 ms at each scan.
func TestEmptyEnvironmentIsFinal(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "-c", "echo ready; read x")
	cmd.Env = []string{}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	// The shell prints once it runs: its exec, and so its environment's set-up, is over.
	line := make([]byte, 6)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "ready\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ"); err != nil || len(b) != 0 {
		t.Fatalf("the environment of sh under env -i: %q, %v (want empty)", b, err)
	}
	if _, ok, read := LookupEnv(cmd.Process.Pid, "PTYHUB_SESSION"); ok || !read {
		t.Fatalf("LookupEnv of an empty environment: found %v, read %v (want false, true)", ok, read)
	}
}
