package reaper

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/pty"
)

// TestServerLeftToTheUser: a session's command starts a per-user server (a session
// leader marked EnvServer=1, without the session's marker, with a child) and a setsid
// escaper that keeps the marker. When the command ends (the server is then an orphan
// under the reaper), or when the session is killed while it runs (the server is in the
// leader's subtree), the session's sweep ends the escaper and not the server nor its
// child, nor does the reaper's shutdown sweep (tag "").
func TestServerLeftToTheUser(t *testing.T) {
	t.Run("ended", func(t *testing.T) { testServerLeft(t, false) })
	t.Run("killed", func(t *testing.T) { testServerLeft(t, true) })
}

func testServerLeft(t *testing.T, kill bool) {
	r := startReaper(t)
	m, slave, err := pty.Open(24, 80)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sh, _ := exec.LookPath("sh")
	script := `env -u ` + EnvSession + ` ` + EnvServer + `=1 setsid sh -c 'echo PID $$; sleep 1007 & echo PID $!; wait' </dev/null &
setsid sh -c 'echo PID $$; exec sleep 1008' </dev/null &
read x`
	env := append(os.Environ(), EnvSession+"=srv")
	leader, _, err := r.Spawn(Spec{Path: sh, Argv: []string{"sh", "-c", script}, Env: env, Ctty: true, Tag: "srv", Hold: true}, slave, slave, slave)
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(m)
	pids := readPids(t, rd, 3)
	// Each printed its pid after its exec: its environment is its own. The server's
	// line comes before its child's; the escaper's may come anywhere.
	marked := func(pid int) bool { v, _ := proc.Getenv(pid, EnvServer); return v == "1" }
	var server, child, esc int
	for _, pid := range pids {
		p, err := proc.Stat(pid)
		if err != nil {
			t.Fatalf("process %d: %v", pid, err)
		}
		switch {
		case p.Sid == pid && server == 0 && marked(pid):
			server = pid
		case p.Sid == pid:
			esc = pid
		default:
			child = pid
		}
	}
	if server == 0 || child == 0 || esc == 0 {
		t.Fatalf("server %d, its child %d, escaper %d from %v", server, child, esc, pids)
	}
	t.Cleanup(func() {
		syscall.Kill(-server, syscall.SIGKILL)
		waitGone(t, []int{server, child})
	})
	if st, _ := proc.Stat(child); st.PPID != server {
		t.Fatalf("the server's child %d has parent %d, not %d", child, st.PPID, server)
	}
	var survivors []Survivor
	if kill {
		survivors, err = r.Kill("srv", time.Second, true)
		if err != nil {
			t.Fatal(err)
		}
	} else {
		if _, err := m.Write([]byte("\n")); err != nil {
			t.Fatal(err)
		}
		waitHeldZombie(t, leader)
		e, err := r.Release("srv", leader)
		if err != nil {
			t.Fatal(err)
		}
		survivors = e.Survivors
	}
	var swept []int
	for _, s := range survivors {
		swept = append(swept, s.PID)
	}
	if !slices.Contains(swept, esc) {
		t.Errorf("the sweep took %v, not the escaper %d", swept, esc)
	}
	if slices.Contains(swept, server) || slices.Contains(swept, child) {
		t.Errorf("the sweep took %v: the server %d or its child %d among them", swept, server, child)
	}
	waitGone(t, []int{esc})
	if got := alive([]int{server, child}); len(got) != 2 {
		t.Fatalf("only %v of the server %d and its child %d survived the session's sweep", got, server, child)
	}
	if _, err := r.Kill("", time.Second, true); err != nil {
		t.Fatal(err)
	}
	if got := alive([]int{server, child}); len(got) != 2 {
		t.Fatalf("only %v of the server %d and its child %d survived the shutdown sweep", got, server, child)
	}
}
