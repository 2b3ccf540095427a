package session

import (
	"context"
	"regexp"
	"strconv"
	"syscall"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/proc"
)

// undumpableScript is a session leader that leaves behind, as orphans, processes that
// are not dumpable (prctl(PR_SET_DUMPABLE, 0): their environment, PTYHUB_SESSION
// included, reads EACCES) and ignore SIGHUP and SIGTERM: "stay", forked by a child that
// exits, still in the leader's session; "new", in a session a child made with setsid,
// beside "mark", a dumpable process of that session; with the argument "lone", only "new",
// alone in its session. It prints "LEADER <pid>" and
// "<name> <pid>" for each, then READY, once every one is an orphan and not dumpable, and
// waits for a line.
const undumpableScript = `import ctypes, os, signal, sys
r, w = os.pipe()
def orphan(name, undumpable):
    if os.fork() == 0:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if undumpable and ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
            os._exit(3)
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.write(w, ("%s %d\n" % (name, os.getpid())).encode())
        os.close(w)
        while True:
            signal.pause()
lone = sys.argv[1:] == ["lone"]
kids = []
for new in ((True,) if lone else (False, True)):
    pid = os.fork()
    if pid == 0:
        if new:
            os.setsid()
            orphan("new", True)
            if not lone:
                orphan("mark", False)
        else:
            orphan("stay", True)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
os.close(w)
print("LEADER", os.getpid())
sys.stdout.write(os.fdopen(r).read())
print("READY", flush=True)
sys.stdin.readline()
`

// TestReaperDeathEndsUndumpable: when a session's reaper dies (SIGKILL), the manager
// ends the session's processes itself without the subreaper: an orphan whose environment
// it cannot read is found by its session id — the leader's (the leader still runs, its
// start time the recorded one), or that of a marked process of its new session — and
// killed, with the marked one. Run as an ordinary user: root reads every environment.
func TestReaperDeathEndsUndumpable(t *testing.T) {
	python, done := testtool.Unprivileged(t)
	if done {
		return
	}
	_, pids := startUndumpable(t, python)
	leader := pids["LEADER"]
	for _, name := range []string{"stay", "new"} {
		if _, ok, read := proc.LookupEnv(pids[name], "PTYHUB_SESSION"); ok || !read {
			t.Fatalf("%s (%d): its environment is not hidden (ok %v, read %v)", name, pids[name], ok, read)
		}
	}
	if st, _ := proc.Stat(pids["stay"]); st.Sid != leader {
		t.Fatalf("stay left the leader's session: %+v", st)
	}
	if st, _ := proc.Stat(pids["new"]); st.Sid == leader {
		t.Fatalf("new is in the leader's session: %+v", st)
	}
	proctest.KillReaperOf(t, leader)
	want := []int{leader, pids["stay"], pids["new"], pids["mark"]}
	proctest.WaitExited(t, want, "outlived its session's reaper")
}

// startUndumpable runs undumpableScript (with args) in a session of a new manager and
// returns the client and the pids it printed.
func startUndumpable(t *testing.T, python string, args ...string) (*Client, map[string]int) {
	t.Helper()
	m, err := NewManager(Options{NoRecord: true, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c := m.NewClient("t")
	yield := int64(60_000)
	r, err := c.Exec(context.Background(), ExecRequest{Argv: append([]string{python, "-c", undumpableScript}, args...), WaitFor: "^READY", YieldTimeMs: &yield})
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for _, mm := range regexp.MustCompile(`(?m)^(\w+) (\d+)\s*$`).FindAllStringSubmatch(r.Output, -1) {
		pids[mm[1]], _ = strconv.Atoi(mm[2])
	}
	names := []string{"LEADER", "stay", "new", "mark"}
	if len(args) > 0 {
		names = []string{"LEADER", "new"}
	}
	for _, name := range names {
		if pids[name] == 0 {
			t.Fatalf("no %s pid in the output %q", name, r.Output)
		}
	}
	starts := map[int]uint64{}
	for _, pid := range pids {
		starts[pid] = proc.StartTime(pid)
	}
	t.Cleanup(func() { // a failed test leaves none behind (pid and start checked)
		for pid, start := range starts {
			if start != 0 && proc.StartTime(pid) == start {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return c, pids
}

// TestKillEndsLoneUndumpable: kill_session ends a process of the session that is not
// dumpable and left it (setsid, its parent gone), alone in its new session: under the
// subreaper it is the reaper's orphan, and no other session runs that could own it.
func TestKillEndsLoneUndumpable(t *testing.T) {
	testtool.KernelOnly(t, "orphans re-parent to the reaper (a subreaper)")
	python, done := testtool.Unprivileged(t)
	if done {
		return
	}
	c, pids := startUndumpable(t, python, "lone")
	if _, ok, read := proc.LookupEnv(pids["new"], "PTYHUB_SESSION"); ok || !read {
		t.Fatalf("new (%d): its environment is not hidden (ok %v, read %v)", pids["new"], ok, read)
	}
	if _, err := c.Kill(context.Background(), KillRequest{SessionID: "1"}); err != nil {
		t.Fatal(err)
	}
	want := []int{pids["LEADER"], pids["new"]}
	proctest.WaitExited(t, want, "outlived kill_session")
}
