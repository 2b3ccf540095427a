package session

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/reaper"
)

// A log left by a manager that died (with its reaper) names a session still running: the
// next registry sweeps the session's processes and removes the log; ended sessions in
// the log and this manager's own log are left alone.
func TestRegistrySweepsDeadOwnersLog(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	dir := filepath.Join(state, "registry")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const uuid, ended = "0190-left-running", "0190-ended"
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
	// The owner: a pid that is not running with that start time.
	owner, ownerStart := os.Getpid(), uint64(1)
	line := func(id string, leader int, ls uint64) string {
		b, _ := json.Marshal(regEntry{UUID: id, Leader: leader, LeaderStart: ls, Owner: owner, OwnerStart: ownerStart})
		return "+" + string(b) + "\n"
	}
	dead := filepath.Join(dir, logName(owner, ownerStart))
	content := line(ended, 1, 1) + line(uuid, cmd.Process.Pid, start) + "-" + ended + "\n" + "+{torn"
	if err := os.WriteFile(dead, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := readEntries(dead); len(got) != 1 || got[0].UUID != uuid {
		t.Fatalf("live entries of the log: %+v", got)
	}
	var r registry
	r.init(state, func(string, ...any) {})
	t.Cleanup(r.close)
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the session left running was not ended")
	}
	for {
		if _, err := os.Stat(dead); os.IsNotExist(err) {
			break
		}
		time.Sleep(5 * time.Millisecond) // the sweep removes the log after the kill
	}
	if _, err := os.Stat(filepath.Join(dir, logName(r.self, r.start))); err != nil {
		t.Errorf("this manager's log: %v", err)
	}
}

// Starts and ends append to one log, which is rewritten once most of its lines are dead:
// it stays small however many sessions come and go, and keeps every live entry.
func TestRegistryLogStaysSmall(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	var r registry
	r.init(state, func(string, ...any) {})
	path := filepath.Join(state, "registry", logName(r.self, r.start))
	var keep []string
	for i := range 5000 {
		s := &Session{uuid: "uuid-" + strconv.Itoa(i), pid: os.Getpid()}
		r.add(s)
		if i%1000 == 7 {
			keep = append(keep, s.uuid)
			continue
		}
		r.remove(s)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 64<<10 {
		t.Errorf("log of 5 live sessions after 5,000 starts: %d bytes", st.Size())
	}
	var got []string
	for _, en := range readEntries(path) {
		got = append(got, en.UUID)
	}
	slices.Sort(got)
	slices.Sort(keep)
	if !slices.Equal(got, keep) {
		t.Errorf("live entries %v, want %v", got, keep)
	}
	for _, id := range keep {
		r.remove(&Session{uuid: id})
	}
	r.close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the log of a manager that ended with no session left: %v", err)
	}
}
