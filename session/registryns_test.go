package session

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ptyhub/ptyhub/reaper"
)

// TestRegistryLeavesHeldLog: a manager in another pid namespace that shares the state
// directory (a container with the user's home mounted, a `ptyhub serve` under `unshare
// --pid`) writes its log under a pid and start time that mean another process, or
// none, where the sweep runs. It holds its log (holdLog), so the sweep leaves its live
// sessions and its log alone: before, a server started beside it took them for the
// leftovers of a dead manager, killed every process of them and removed the log.
// The log is held here by the test, as that manager does; its owner's pid is this
// process with a start time it does not have.
func TestRegistryLeavesHeldLog(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	dir := filepath.Join(state, "registry")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const uuid = "0190-other-namespace"
	cmd := exec.Command("sleep", "1000")
	cmd.Env = append(os.Environ(), reaper.EnvSession+"="+uuid)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	go func() { cmd.Wait(); close(gone) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-gone })
	var start uint64
	for start == 0 { // the child has not exec'd yet when its stat is unreadable
		start = procStart(cmd.Process.Pid)
	}
	owner, ownerStart := os.Getpid(), uint64(1)
	b, _ := json.Marshal(regEntry{UUID: uuid, Leader: cmd.Process.Pid, LeaderStart: start, Owner: owner, OwnerStart: ownerStart})
	path := filepath.Join(dir, logName(owner, ownerStart, 0))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	holdLog(f)
	if _, err := f.Write(append(append([]byte{'+'}, b...), '\n')); err != nil {
		t.Fatal(err)
	}
	r := registry{dir: dir}
	r.sweepStale(func(string, ...any) {}) // synchronous here: it returns after any kill
	select {
	case <-gone:
		t.Fatal("the sweep killed a session of a manager that holds its log")
	default:
	}
	if procStart(cmd.Process.Pid) != start {
		t.Fatal("the session's process is gone")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the held log: %v", err)
	}
	// Once its manager lets go of it (dies), the same log is swept.
	f.Close()
	r.sweepStale(func(string, ...any) {})
	<-gone
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the log of a manager gone: %v", err)
	}
}
