package ptyhub_test

import (
	"context"
	"encoding/json"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
)

// prlimitPath finds prlimit (util-linux); in CI its absence is a failure.
func prlimitPath(t *testing.T) string {
	t.Helper()
	testtool.Need(t, "prlimit")
	p, _ := osexec.LookPath("prlimit")
	return p
}

// serveLimited starts `ptyhub serve` for h under prlimit --nofile=nofile and returns its
// log; it is stopped with SIGTERM at cleanup.
func serveLimited(t *testing.T, h *svHub, nofile string, extra ...string) *testtool.Buffer {
	t.Helper()
	args := append([]string{"--nofile=" + nofile, h.bin, "serve", "--idle-exit", "0"}, extra...)
	srv := osexec.Command(prlimitPath(t), args...)
	srv.Env = h.env
	logb := &testtool.Buffer{}
	srv.Stderr = logb
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() })
	// The lock names the server before it listens; "serving" is logged once it does.
	svWait(t, "the server", func() bool {
		return h.serverPID() == srv.Process.Pid && strings.Contains(logb.String(), "serving")
	})
	return logb
}

// softNofile reads the soft open-files limit of pid.
func softNofile(t *testing.T, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Max open files") {
			f := strings.Fields(l)
			n, _ := strconv.Atoi(f[3])
			return n
		}
	}
	t.Fatal("no Max open files in /proc/PID/limits")
	return 0
}

// TestServerRaisesNofileNotForSessions: the server runs with its soft open-files limit
// raised to the hard one (the Go runtime does it at start, to one below the hard limit);
// the programs of its sessions get the original soft limit.
func TestServerRaisesNofileNotForSessions(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	serveLimited(t, h, "300:4000")
	if n := softNofile(t, h.serverPID()); n < 3999 {
		t.Errorf("server soft limit %d, want the hard limit 4000", n)
	}
	out := h.ok("exec", "-c", "ulimit -Sn")
	if !strings.Contains(out, "\n300") && !strings.HasPrefix(out, "300") {
		t.Errorf("a session's soft limit: %q, want 300", out)
	}
}

// TestServerOutOfFDs: under a 256-descriptor limit the server refuses sessions cleanly
// once it runs short: the error names the limit (and is not an exit code of the
// program), the running sessions keep running, the server still answers, and once some
// sessions end new ones start.
func TestServerOutOfFDs(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	// The session limit well above what 256 descriptors hold, so the descriptors run out
	// first (the portable paths spend fewer per session: no pidfd).
	serveLimited(t, h, "256", "--max-sessions", "1000")
	pid := h.serverPID()
	var ids []string
	var refusal string
	for i := 0; i < 400 && refusal == ""; i++ {
		out, errs, code := h.run("exec", "--json", "--yield", "0", "--", "sleep", "1000")
		if code == 124 {
			var r session.Result
			if err := json.Unmarshal([]byte(out), &r); err != nil || r.State != session.StateRunning {
				t.Fatalf("session %d: %v %s", i, err, out)
			}
			ids = append(ids, r.SessionID)
			continue
		}
		if code == 127 || code == 126 {
			t.Fatalf("session %d: exit code %d for a limit: %s %s", i, code, out, errs)
		}
		refusal = errs
	}
	t.Logf("%d sessions ran, then: %s", len(ids), strings.TrimSpace(refusal))
	if refusal == "" || !strings.Contains(refusal, "RLIMIT_NOFILE") || !strings.Contains(refusal, "ulimit -n") {
		t.Fatalf("no clean refusal naming the limit after %d sessions: %q", len(ids), refusal)
	}
	if len(ids) < 30 {
		t.Errorf("only %d sessions before the limit", len(ids))
	}
	if h.serverPID() != pid {
		t.Fatal("the server did not survive")
	}
	// Still answering, and every session still running with its process.
	var l session.ListResult
	if err := json.Unmarshal([]byte(h.ok("ls", "--json")), &l); err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, s := range l.Sessions {
		if s.State == session.StateRunning && len(proctest.WithEnv("PTYHUB_SESSION="+s.UUID)) == 1 {
			running++
		}
	}
	if running != len(ids) {
		t.Errorf("%d of %d sessions running after the refusal", running, len(ids))
	}
	// Ending a few makes room.
	for _, id := range ids[:5] {
		h.ok("rm", id)
	}
	out, errs, code := h.run("exec", "--", "echo", "room again")
	if code != 0 || !strings.Contains(out, "room again") {
		t.Errorf("after rm: status %d: %s %s", code, out, errs)
	}
	if h.serverPID() != pid {
		t.Fatal("the server did not survive")
	}
}

// TestServerKillRmMany: kill and rm take several ids, rm --exited forgets the ended
// sessions only, kill --all ends the rest, rm --all forgets everything.
func TestServerKillRmMany(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	var ids []string
	for range 4 {
		var r session.Result
		out, _, _ := h.run("exec", "--json", "--yield", "0", "--", "sleep", "1000")
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.SessionID)
	}
	h.ok("exec", "--", "true")
	list := func() map[string]string {
		var l session.ListResult
		if err := json.Unmarshal([]byte(h.ok("ls", "--json")), &l); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, s := range l.Sessions {
			m[s.SessionID] = s.State
		}
		return m
	}
	h.ok("kill", ids[0], ids[1])
	if l := list(); l[ids[0]] != session.StateExited || l[ids[1]] != session.StateExited || l[ids[2]] != session.StateRunning || len(l) != 5 {
		t.Errorf("after kill %s %s: %v", ids[0], ids[1], l)
	}
	h.ok("rm", "--exited")
	if l := list(); len(l) != 2 || l[ids[2]] != session.StateRunning || l[ids[3]] != session.StateRunning {
		t.Errorf("after rm --exited: %v", l)
	}
	if _, errs, code := h.run("rm", ids[2], "999"); code == 0 || !strings.Contains(errs, "999") {
		t.Errorf("rm of an unknown id: status %d, %q", code, errs)
	}
	h.ok("kill", "--all")
	if l := list(); len(l) != 1 || l[ids[3]] != session.StateExited {
		t.Errorf("after kill --all: %v", l)
	}
	h.ok("rm", "--all")
	if l := list(); len(l) != 0 {
		t.Errorf("after rm --all: %v", l)
	}
}

// TestCloseManySessions: closing a manager with hundreds of running sessions, each with
// a background child, ends every process of every one of them.
func TestCloseManySessions(t *testing.T) {
	t.Parallel()
	m, err := session.NewManager(session.Options{MaxSessions: 5000, NoRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	c := m.NewClient("t")
	tag := "PTYHUB_TEST_CLOSE_MANY=" + strconv.Itoa(os.Getpid())
	const n = 300
	for i := range n {
		r, err := c.Exec(context.Background(), session.ExecRequest{Cmd: "sleep 1000 & exec sleep 1000",
			Env: map[string]string{"PTYHUB_TEST_CLOSE_MANY": strconv.Itoa(os.Getpid())}, YieldTimeMs: new(int64(0))})
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if r.State != session.StateRunning {
			t.Fatalf("session %d: %s", i, r.State)
		}
	}
	svWait(t, "every session's two processes", func() bool { return len(proctest.WithEnv(tag)) == 2*n })
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := proctest.WithEnv(tag); len(left) > 0 {
		t.Errorf("%d processes left after Close", len(left))
	}
}

// TestServerShortIDsSurviveRestart: short ids are never reused after a restart of the
// server, and logs and read find a removed or pre-restart session by its short id.
func TestServerShortIDsSurviveRestart(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	id := func(out string) int {
		var r session.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		n, _ := strconv.Atoi(r.SessionID)
		return n
	}
	first := id(h.ok("exec", "--json", "--", "echo", "first-output"))
	h.ok("rm", strconv.Itoa(first))
	if out := h.ok("logs", strconv.Itoa(first)); !strings.Contains(out, "first-output") {
		t.Errorf("logs %d after rm: %q", first, out)
	}
	if out, errs, code := h.run("read", strconv.Itoa(first)); code != 0 || !strings.Contains(out, "first-output") || !strings.Contains(errs, "transcript") {
		t.Errorf("read %d after rm: status %d, %q, %q", first, code, out, errs)
	}
	second := id(h.ok("exec", "--json", "--", "echo", "second-output"))
	h.stop()
	third := id(h.ok("exec", "--json", "--", "echo", "third-output"))
	if second <= first || third <= second {
		t.Errorf("ids %d, %d, then %d after a restart: reused", first, second, third)
	}
	if out := h.ok("logs", strconv.Itoa(second)); !strings.Contains(out, "second-output") {
		t.Errorf("logs %d after a restart: %q", second, out)
	}
	if out, _, code := h.run("read", strconv.Itoa(second)); code != 0 || !strings.Contains(out, "second-output") {
		t.Errorf("read %d after a restart: status %d, %q", second, code, out)
	}
	all := h.ok("logs", "--all")
	for _, n := range []int{first, second, third} {
		found := false
		for _, l := range strings.Split(all, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == strconv.Itoa(n) {
				found = true
			}
		}
		if !found {
			t.Errorf("logs --all does not list id %d:\n%s", n, all)
		}
	}
}

// TestServerStatus: ptyhub status reports the sessions by state, the server's fds and
// their limit, and its memory; serve --verbose logs the sessions' starts and ends.
func TestServerStatus(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	log := serveLimited(t, h, "1000", "--verbose", "--max-sessions", "7")
	h.ok("exec", "--", "true")
	h.run("exec", "--yield", "0", "--", "sleep", "1000")
	var st struct {
		Running, Exited, MaxSessions, FDs int
		FDLimit                           int    `json:"fd_limit"`
		RSS                               int64  `json:"rss_bytes"`
		PID                               int    `json:"pid"`
		Max                               int    `json:"max_sessions"`
		Version                           string `json:"version"`
	}
	if err := json.Unmarshal([]byte(h.ok("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Running != 1 || st.Exited != 1 || st.Max != 7 || st.FDs < 5 || st.FDLimit < 999 || st.RSS < 1<<20 || st.PID != h.serverPID() {
		t.Errorf("status: %+v", st)
	}
	if out := h.ok("status"); !strings.Contains(out, "1 running, 1 ended") || !strings.Contains(out, "RLIMIT_NOFILE") {
		t.Errorf("status:\n%s", out)
	}
	svWait(t, "the log of the session's end", func() bool { return strings.Contains(log.String(), "session ended") })
	for _, want := range []string{"session started", "connection opened"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("serve --verbose did not log %q:\n%s", want, log.String())
		}
	}
}

// TestServerPoolsPerClient: through the server, each owning connection (ptyhub mcp) has
// its own limit and the CLI connections share one: a client at its limit prunes its own
// least recently used session, never another client's.
func TestServerPoolsPerClient(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	serveLimited(t, h, "1024", "--max-sessions", "9")
	ctx := context.Background()
	start := func(c *server.Client) *session.Result {
		r, err := c.Exec(ctx, session.ExecRequest{Argv: []string{"sleep", "1000"}, YieldTimeMs: new(int64(0))})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var agents [2]*server.Client
	for i := range agents {
		c, err := server.Dial(ctx, server.DialOptions{Socket: h.socket, Name: "mcp", Own: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx, false)
		agents[i] = c
	}
	// Two CLI connections fill the CLI pool.
	var cli []string
	for range 9 {
		c, err := server.Dial(ctx, server.DialOptions{Socket: h.socket, Name: "exec"})
		if err != nil {
			t.Fatal(err)
		}
		cli = append(cli, start(c).SessionID)
		c.Close(ctx, true)
	}
	// The first agent fills its own pool, then goes one over: only its own go.
	var mine []string
	for range 9 {
		mine = append(mine, start(agents[0]).SessionID)
	}
	theirs := start(agents[1]).SessionID
	over := start(agents[0])
	pruned := strings.Join(over.Warnings, " ")
	if !strings.Contains(pruned, "session "+mine[0]+" ") {
		t.Errorf("the 10th session of an agent with a limit of 9 did not prune its oldest (%s): %q", mine[0], over.Warnings)
	}
	l, err := agents[1].List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]session.Info{}
	for _, in := range l.Sessions {
		state[in.SessionID] = in
	}
	for _, id := range append(append([]string{theirs}, cli...), mine[1:]...) {
		if state[id].State != session.StateRunning {
			t.Errorf("session %s: %+v, want running", id, state[id])
		}
	}
	if in := state[mine[0]]; in.State != session.StateExited || !in.Pruned {
		t.Errorf("pruned session %s: %+v", mine[0], in)
	}
	if text := l.Text(); !strings.Contains(text, "pruned") {
		t.Errorf("the listing does not say pruned:\n%s", text)
	}
	if text := over.Text(); !strings.Contains(text, "Session "+mine[0]+" (sleep 1000) ended: pruned") {
		t.Errorf("the result does not say which session was pruned:\n%s", text)
	}
}
