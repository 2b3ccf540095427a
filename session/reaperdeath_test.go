package session

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
)

// TestReaperDeathToldWithTheEnd: the result that reports a session ended because its
// reaper died also says that the reaper died (pid and how), even when the manager's
// watcher of that reaper has not run yet (held here by watchReaperHook): the session's
// own exit path records the fault before the end is seen. Before, the fault came only
// from the watcher, and a result could report the end without it (the next call then
// carried it).
func TestReaperDeathToldWithTheEnd(t *testing.T) {
	release := make(chan struct{})
	hook := func() { <-release }
	watchReaperHook.Store(&hook)
	t.Cleanup(func() { watchReaperHook.Store(nil); close(release) })

	m, err := NewManager(Options{NoRecord: true, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c := m.NewClient("t")
	yield := int64(30_000)
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: `echo "pid $$"; exec sleep 1000`, WaitFor: `pid \d+`, YieldTimeMs: &yield})
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(r.Output[strings.Index(r.Output, "pid "):])
	leader, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("pid in %q: %v", r.Output, err)
	}
	reaperPid := proctest.KillReaperOf(t, leader)
	w, err := c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, YieldTimeMs: &yield})
	if err != nil {
		t.Fatal(err)
	}
	if w.State != StateExited {
		t.Fatalf("the session still runs after its reaper died: %+v", w)
	}
	warns := strings.Join(w.Notices.Warnings, "\n")
	if !strings.Contains(warns, "pid "+strconv.Itoa(reaperPid)+") died (signal: killed); its running sessions "+r.SessionID+" were ended") {
		t.Errorf("the result reporting the end does not say the reaper died: %q", warns)
	}
	proctest.WaitExited(t, []int{leader}, "outlived its reaper")
}
