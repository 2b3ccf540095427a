package session

import (
	"context"
	"testing"
)

// TestFailedSpawnsLeakNothing: starts that fail — refused arguments (missing or file
// workdir, NUL in argv), a program that is not there or not executable (a session that
// exits 127 or 126), removed afterwards — leave the manager's open files where they
// were. Not parallel: it counts this process's fds.
func TestFailedSpawnsLeakNothing(t *testing.T) {
	m, err := NewManager(Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	ctx := context.Background()
	reqs := []ExecRequest{
		{Cmd: "true", Workdir: "/no/such/dir"},
		{Cmd: "true", Workdir: "/etc/passwd"},
		{Argv: []string{"echo", "a\x00b"}},
		{Argv: []string{"no-such-program-xyz"}, YieldTimeMs: new(int64(60000))},
		{Argv: []string{"/etc/passwd"}, YieldTimeMs: new(int64(60000))},
	}
	run := func(n int) {
		for i := range n {
			req := reqs[i%len(reqs)]
			r, err := c.Exec(ctx, req)
			if err != nil {
				continue // refused before anything was opened
			}
			if r.State != StateExited || r.ExitCode == nil || (*r.ExitCode != 127 && *r.ExitCode != 126) {
				t.Fatalf("%q: %+v", req.Argv, r)
			}
			if _, err := c.Kill(ctx, KillRequest{SessionID: r.SessionID, Remove: true}); err != nil {
				t.Fatal(err)
			}
		}
		m.releasing.Wait()
	}
	run(10)
	fds0 := countFDs(t)
	run(500)
	if fds1 := countFDs(t); fds1 > fds0+4 {
		t.Errorf("open fds grew from %d to %d over 500 failed starts", fds0, fds1)
	}
}
