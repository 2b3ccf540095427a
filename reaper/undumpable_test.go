package reaper

import (
	"bufio"
	"io"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/proc"
)

// escapeScript is a session leader whose child leaves the session (setsid) and forks a
// grandchild that makes itself not dumpable (prctl(PR_SET_DUMPABLE, 0), as ssh-agent
// does: its /proc/PID/environ then reads EACCES, so PTYHUB_SESSION cannot be seen), ignores
// SIGHUP and SIGTERM and waits forever; the child then exits, so the grandchild is an
// orphan outside the leader's session and subtree. With "sibling", the child also forks a
// second, dumpable orphan in the same new session. The leader prints "PID <grandchild>"
// (and "PID <sibling>") once the child is reaped — the grandchild re-parented and not
// dumpable by then — and waits for a line on its terminal.
const escapeScript = `import ctypes, os, signal, sys
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.setsid()
    kids = 2 if sys.argv[1] == "sibling" else 1
    for i in range(kids):
        if os.fork() == 0:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if i == 0 and ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
                os._exit(3)
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.write(w, b"%d\n" % os.getpid())
            os.close(w)
            while True:
                signal.pause()
    os._exit(0)
os.close(w)
os.waitpid(child, 0)
f = os.fdopen(r)
for line in f:
    print("PID", line.strip(), flush=True)
sys.stdin.readline()
`

// spawnEscaper starts escapeScript in session tag and returns the leader and the orphans'
// pids (the undumpable one first), checking that the first really is out of reach of
// the environment and of the leader's session.
func spawnEscaper(t *testing.T, r *Reaper, python, tag, mode string) (leader int, orphans []int) {
	t.Helper()
	m, leader, _ := spawnPTY(t, r, tag, python, "-c", escapeScript, mode)
	rd := bufio.NewReader(m)
	n := 1
	if mode == "sibling" {
		n = 2
	}
	orphans = readPids(t, rd, n)
	go io.Copy(io.Discard, rd)
	var undumpable int
	for _, pid := range orphans {
		if _, _, read := proc.LookupEnv(pid, EnvSession); !read {
			t.Fatalf("orphan %d: environment neither read nor refused", pid)
		}
		if _, ok := proc.Getenv(pid, EnvSession); !ok {
			undumpable = pid
		}
	}
	if undumpable == 0 {
		t.Fatalf("no orphan of %v hides its environment (prctl(PR_SET_DUMPABLE, 0) failed?)", orphans)
	}
	st, err := proc.Stat(undumpable)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sid == leader || st.PPID == leader {
		t.Fatalf("the orphan %d did not leave the session: %+v", undumpable, st)
	}
	starts := map[int]uint64{}
	for _, pid := range orphans {
		starts[pid] = proc.StartTime(pid)
	}
	t.Cleanup(func() { // a failed test leaves none behind (pid and start checked)
		for pid, start := range starts {
			if start != 0 && proc.StartTime(pid) == start {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return leader, append([]int{undumpable}, slices.DeleteFunc(slices.Clone(orphans), func(p int) bool { return p == undumpable })...)
}

// TestKillFindsUndumpableBesideMarked: a process that is not dumpable and left the
// session with setsid is found by the kill through the marked process that shares its
// new session — on every platform, the portable paths included (no subreaper there).
func TestKillFindsUndumpableBesideMarked(t *testing.T) {
	python, done := testtool.Unprivileged(t) // root would read the environment anyway
	if done {
		return
	}
	r := startReaper(t)
	_, orphans := spawnEscaper(t, r, python, "undump-sibling", "sibling")
	surv, err := r.Kill("undump-sibling", 200*time.Millisecond, true)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, orphans)
	if !slices.ContainsFunc(surv, func(s Survivor) bool { return s.PID == orphans[0] }) {
		t.Errorf("the kill's list %+v does not name the undumpable orphan %d", surv, orphans[0])
	}
}

// TestKillFindsUndumpableOrphan: the same process alone in its new session, nothing
// marked beside it, is found by the kill under the subreaper: it is the reaper's orphan,
// so a process of one of its sessions, and no other session runs that could have
// started it. A second session started before it keeps it alive (it could be that
// session's) until that one is killed too; a session started after it does not.
func TestKillFindsUndumpableOrphan(t *testing.T) {
	testtool.KernelOnly(t, "orphans re-parent to the reaper (a subreaper)")
	python, done := testtool.Unprivileged(t) // root would read the environment anyway
	if done {
		return
	}
	r := startReaper(t)
	_, earlier, _ := spawnPTY(t, r, "undump-earlier", "sleep", "1000")
	_, orphans := spawnEscaper(t, r, python, "undump-alone", "alone")
	esc := orphans[0]
	_, later, _ := spawnPTY(t, r, "undump-later", "sleep", "1000")
	if p, err := proc.Stat(esc); err != nil || p.PPID != r.Pid() {
		t.Fatalf("the orphan %d is not the reaper's child: %+v %v", esc, p, err)
	}

	// A session that started before the orphan runs: it may own it, so it stays.
	if _, err := r.Kill("undump-alone", 100*time.Millisecond, true); err != nil {
		t.Fatal(err)
	}
	if len(alive([]int{esc})) == 0 {
		t.Fatal("the orphan was killed while an earlier session that may own it runs")
	}
	named := func(tag string) bool {
		return slices.ContainsFunc(r.Survivors(tag), func(s Survivor) bool { return s.PID == esc })
	}
	if !named("undump-earlier") {
		t.Errorf("the earlier session, the one left that may own it, does not list the orphan %d", esc)
	}
	if named("undump-later") {
		t.Errorf("the later session lists the orphan %d", esc)
	}
	surv, err := r.Kill("undump-earlier", 100*time.Millisecond, true)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, []int{esc, earlier})
	if !slices.ContainsFunc(surv, func(s Survivor) bool { return s.PID == esc }) {
		t.Errorf("the kill's list %+v does not name the orphan %d", surv, esc)
	}
	if len(alive([]int{later})) != 1 {
		t.Errorf("the later session's leader %d was killed", later)
	}
}

// TestKillAloneFindsUndumpableOrphan: with no other session, the kill of the session
// ends its undumpable setsid orphan.
func TestKillAloneFindsUndumpableOrphan(t *testing.T) {
	testtool.KernelOnly(t, "orphans re-parent to the reaper (a subreaper)")
	python, done := testtool.Unprivileged(t) // root would read the environment anyway
	if done {
		return
	}
	r := startReaper(t)
	leader, orphans := spawnEscaper(t, r, python, "undump-only", "alone")
	surv, err := r.Kill("undump-only", 100*time.Millisecond, true)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, append(orphans, leader))
	if !slices.ContainsFunc(surv, func(s Survivor) bool { return s.PID == orphans[0] }) {
		t.Errorf("the kill's list %+v does not name the orphan %d", surv, orphans[0])
	}
}
