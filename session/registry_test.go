package session

import (
	"context"
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
	dead := filepath.Join(dir, logName(owner, ownerStart, 0))
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
	if _, err := os.Stat(filepath.Join(dir, r.name)); err != nil {
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
	path := filepath.Join(state, "registry", r.name)
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

// Managers that share a state directory — the server and each ptyhub mcp that hosts its
// own sessions — never give the same short id, however their starts interleave: each
// reserves blocks of ids under a lock on the directory's id file.
func TestManagersNeverShareShortIDs(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	const perManager = idBlock + 10 // each crosses a block boundary
	ids := make([][]int, 2)
	done := make(chan int)
	for k := range ids {
		m, err := NewManager(Options{NoRecord: true, StateDir: state, MaxSessions: 1000})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(context.Background()) })
		c := m.NewClient("t")
		go func() {
			defer func() { done <- k }()
			for range perManager {
				r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"true"}})
				if err != nil {
					t.Error(err)
					return
				}
				id, _ := strconv.Atoi(r.SessionID)
				ids[k] = append(ids[k], id)
				c.Kill(context.Background(), KillRequest{SessionID: r.SessionID, Remove: true})
			}
		}()
	}
	<-done
	<-done
	seen := map[int]int{}
	for k, list := range ids {
		if len(list) != perManager {
			t.Fatalf("manager %d started %d sessions, want %d", k, len(list), perManager)
		}
		for _, id := range list {
			if other, ok := seen[id]; ok {
				t.Errorf("id %d given by managers %d and %d", id, other, k)
			}
			seen[id] = k
		}
	}
	// A third manager of the directory continues above both.
	m, _ := NewManager(Options{NoRecord: true, StateDir: state})
	t.Cleanup(func() { m.Close(context.Background()) })
	r, err := m.NewClient("t").Exec(context.Background(), ExecRequest{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	next, _ := strconv.Atoi(r.SessionID)
	for id := range seen {
		if next <= id {
			t.Fatalf("a later manager gave id %d, not above %d", next, id)
		}
	}
}

// A manager that closes gives back the ids it reserved and did not give, unless another
// manager reserved since: ids stay dense when managers (every ptyhub mcp) come and go.
func TestShortIDsStayDense(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	start := func(m *Manager) int {
		t.Helper()
		r, err := m.NewClient("t").Exec(context.Background(), ExecRequest{Argv: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		id, _ := strconv.Atoi(r.SessionID)
		return id
	}
	newManager := func() *Manager {
		m, err := NewManager(Options{NoRecord: true, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := newManager()
	if id := start(a); id != 1 {
		t.Fatalf("first id %d", id)
	}
	a.Close(context.Background())
	b, c := newManager(), newManager()
	if id := start(b); id != 2 {
		t.Errorf("after a manager closed, the next id is %d, want 2", id)
	}
	if id := start(c); id != 2+idBlock {
		t.Errorf("a second manager's first id is %d, want %d", id, 2+idBlock)
	}
	b.Close(context.Background()) // c reserved after b: b's block is not given back
	d := newManager()
	t.Cleanup(func() { c.Close(context.Background()); d.Close(context.Background()) })
	if id := start(d); id != 2+2*idBlock {
		t.Errorf("a manager after one whose block was followed starts at %d, want %d", id, 2+2*idBlock)
	}
}

// reserveIDs never goes below the caller's floor nor the bound on disk, and says when it
// could not write the new bound; a file that cannot be replaced is rewritten in place.
func TestReserveIDsFloorAndFallback(t *testing.T) {
	dir := t.TempDir()
	r := &registry{idFile: filepath.Join(dir, "session-ids")}
	if err := os.WriteFile(r.idFile, []byte("10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if first, err := r.reserveIDs(20, 64); first != 21 || err != nil {
		t.Errorf("floor 20 over a bound of 10: first %d, %v; want 21", first, err)
	}
	if b, _ := os.ReadFile(r.idFile); string(b) != "84\n" {
		t.Errorf("bound written %q, want 84", b)
	}
	if first, err := r.reserveIDs(0, 64); first != 85 || err != nil {
		t.Errorf("floor 0 over a bound of 84: first %d, %v; want 85", first, err)
	}
	// The temporary file cannot be made (a directory in its place, as a full disk
	// refuses a new file): the bound is rewritten in place.
	if err := os.Mkdir(r.idFile+".tmp", 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.idFile+".tmp", "x"), nil, 0o600) // not removable
	if first, err := r.reserveIDs(0, 64); first != 149 || err != nil {
		t.Errorf("in place: first %d, %v; want 149", first, err)
	}
	if b, _ := os.ReadFile(r.idFile); string(b) != "212\n" {
		t.Errorf("bound rewritten in place %q, want 212", b)
	}
	// Nothing can be written: past both the floor and what the file says, with the error.
	gone := &registry{idFile: filepath.Join(dir, "missing", "session-ids")}
	if first, err := gone.reserveIDs(7, 64); first != 8 || err == nil {
		t.Errorf("unwritable: first %d, %v; want 8 and an error", first, err)
	}
}

// Two managers of one process over one state directory (an embedder's, or tests') each
// keep a log of their own: the second neither truncates the first's entries nor waits
// for the first's lock on its log.
func TestManagersOfOneProcessKeepTheirLogs(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	a, err := NewManager(Options{NoRecord: true, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	ra, err := a.NewClient("t").Exec(context.Background(), ExecRequest{Argv: []string{"sleep", "60"}, YieldTimeMs: new(int64(1))})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewManager(Options{NoRecord: true, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	started := make(chan error, 1)
	go func() {
		_, err := b.NewClient("t").Exec(context.Background(), ExecRequest{Argv: []string{"true"}})
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the second manager's first start never returned (waiting for the first's log lock)")
	}
	if a.reg.name == b.reg.name {
		t.Fatalf("both managers log to %s", a.reg.name)
	}
	if pid, start, ok := logOwner(b.reg.name); !ok || pid != os.Getpid() || start != b.reg.start {
		t.Errorf("logOwner(%q) = %d, %d, %v", b.reg.name, pid, start, ok)
	}
	s, err := a.lookup(ra.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range readEntries(filepath.Join(state, "registry", a.reg.name)) {
		found = found || e.UUID == s.uuid
	}
	if !found {
		t.Errorf("the first manager's log lost its running session %s", s.uuid)
	}
}
