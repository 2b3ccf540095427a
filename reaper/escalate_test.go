//go:build linux || darwin || freebsd

package reaper

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/proc"
)

// A scan that misses a live member once (its dying parent's children were being
// re-parented while it read them) must not end the escalation: the kill goes on until
// two scans a moment apart find none, so the member is SIGKILLed. The scan here lists a
// real process that ignores SIGHUP and SIGTERM and hides it from its second call, the
// interleaving that left such a job alive after a kill returned.
func TestEscalateSurvivesOneMissedScan(t *testing.T) {
	cmd := exec.Command("sh", "-c", "trap '' HUP TERM; echo ready; exec sleep 1009")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	t.Cleanup(func() { cmd.Process.Kill(); <-waited })
	go func() { cmd.Wait(); close(waited) }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err) // the traps are set once it printed
	}
	pid := cmd.Process.Pid
	p, err := proc.Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	scan := func() []proc.Ref {
		if calls.Add(1) == 2 || len(alive([]int{pid})) == 0 {
			return nil // the one missed scan, or the end
		}
		return []proc.Ref{p.Ref()}
	}
	proc.Terminate([]proc.Ref{p.Ref()})
	if !proc.Escalate(func() []proc.Ref { return settled(scan) }, 200*time.Millisecond) {
		t.Fatal("escalation gave up")
	}
	if left := alive([]int{pid}); len(left) > 0 {
		t.Fatalf("escalation ended after %d scans with pid %d alive", calls.Load(), pid)
	}
}

// Many sessions like the job-control tree killed at once, each kill checked the moment
// it returns: no process of the session may be left (the leader exits, and its jobs
// re-parent to the reaper, while the kill's scans run).
func TestKillLeavesNothingManyTrees(t *testing.T) {
	n := 8
	if testing.Short() {
		n = 2
	}
	r := startReaper(t)
	var wg sync.WaitGroup
	for i := range n {
		tag := "tree-" + strconv.Itoa(i)
		m, _, exit := spawnPTY(t, r, tag, "bash", "--norc", "--noprofile", "-i")
		rd := bufio.NewReader(m)
		if err := untilPrompt(rd, "$ "); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Write([]byte("stty -echo\n" + jobScript)); err != nil {
			t.Fatal(err)
		}
		pids := readPids(t, rd, 4)
		go io.Copy(io.Discard, rd)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Kill(tag, DefaultGrace, true); err != nil {
				t.Error(err)
				return
			}
			if left := alive(pids); len(left) > 0 {
				t.Errorf("%s: %v alive after the kill returned (of %v)", tag, left, pids)
			}
			if s := r.Survivors(tag); len(s) > 0 {
				t.Errorf("%s: members %+v after the kill returned", tag, s)
			}
			<-exit
		}()
	}
	wg.Wait()
}

// A session whose leader was reaped does not take the tree of a new leader that got the
// same pid (pids wrap on a busy machine) while its own sweep still runs: the sweep would
// kill another session.
func TestMembersNotThroughAReusedLeaderPid(t *testing.T) {
	cmd := exec.Command("sleep", "1010")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	// "old"'s leader had this pid and was reaped; "new" was then spawned on it.
	h := &helper{self: os.Getpid(), leaders: map[int]*leader{pid: {tag: "new"}},
		tags: map[string]int{"old": pid, "new": pid}, sidTag: map[int]string{pid: "new"}}
	if got := pids(h.members("new")); !slices.Contains(got, pid) {
		t.Fatalf("the live leader %d is not a member of its own session: %v", pid, got)
	}
	if got := pids(h.members("old")); slices.Contains(got, pid) {
		t.Errorf("the old session's members %v take the new leader %d", got, pid)
	}
}

// A process kill(2) refuses with EPERM (another user's, such as what sudo runs in a
// session) is dropped from the escalation's scans and reported once, so the rounds end;
// a process we may kill stays in them. The refusal is the kernel's when the test runs
// unprivileged (pid 1), and made up for a real process when it runs as root.
func TestEscalateGivesUpOnRefused(t *testing.T) {
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command("sleep", "1013")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		cmds = append(cmds, cmd)
	}
	foreign, ours := cmds[0].Process.Pid, cmds[1].Process.Pid
	kill0 := func(pid int) error {
		if pid == foreign {
			return syscall.EPERM
		}
		return signal0(pid)
	}
	if os.Geteuid() != 0 {
		foreign, kill0 = 1, signal0
	}
	var ps []proc.Info
	for _, pid := range []int{foreign, ours} {
		p, err := proc.Stat(pid)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	refused := map[int]uint64{}
	var reported []int
	report := func(pid int) { reported = append(reported, pid) }
	for range 3 {
		if got := dropRefused(ps, refused, kill0, report); !slices.Equal(got, []proc.Ref{ps[1].Ref()}) {
			t.Fatalf("dropRefused kept %v, want [%d]", got, ours)
		}
	}
	if !slices.Equal(reported, []int{foreign}) {
		t.Errorf("reported %v, want [%d] once", reported, foreign)
	}
	// The rounds end with only the refused process left.
	if !proc.Escalate(func() []proc.Ref { return dropRefused(ps[:1], refused, kill0, report) }, time.Millisecond) {
		t.Error("escalation went on with only a refused process left")
	}
}
