package ptyhub_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/reaper"
)

// TestServerStartedInSessionOutlivesIt: a command in a session of server A (or of an
// agent's ptyhub mcp, which hosts its sessions) runs `ptyhub exec` against another
// socket, which starts server B and a session there, then the command ends. Server B is
// re-parented to A's reaper once its client exits, and is the user's, not the session's:
// neither the session's end nor A's shutdown takes B, its reaper or its session; B's
// environment carries no PTYHUB_SESSION. Then kill-server (with B's environment) ends B
// and its session.
func TestServerStartedInSessionOutlivesIt(t *testing.T) {
	t.Parallel()
	t.Run("server", func(t *testing.T) {
		t.Parallel()
		testNestedServer(t, func(a *svHub, argv []string) (string, func()) {
			return a.ok(append([]string{"exec", "--yield", "3m", "--name", "outer", "--"}, argv...)...), a.stop
		})
	})
	t.Run("mcp", func(t *testing.T) {
		t.Parallel()
		testNestedServer(t, func(a *svHub, argv []string) (string, func()) {
			agent := a.agent()
			r := agent.call("exec_command", map[string]any{"argv": argv, "name": "outer", "yield_time_ms": 180000})
			return fmt.Sprint(r), func() {
				agent.cs.Close()
				svWait(t, "the agent's exit", func() bool { return proctest.Exited(agent.cmd.Process.Pid) })
			}
		})
	})
}

// testNestedServer runs the outer session with outer (which returns what its result
// says and how to stop A) and checks what survives it.
func testNestedServer(t *testing.T, outer func(a *svHub, argv []string) (string, func())) {
	a, b := svNew(t), svNew(t)
	pidFile := filepath.Join(b.dir, "inner.pid")
	inner := "env PTYHUB_SOCKET=" + shQuote(b.socket) + " XDG_STATE_HOME=" + shQuote(filepath.Join(filepath.Dir(b.dir), "state")) +
		" " + shQuote(b.bin) + " exec --name inner --wait-for ready -- sh -c " +
		shQuote("echo $$ >"+shQuote(pidFile)+"; echo ready; exec sleep 300")
	out, stopA := outer(a, []string{"bash", "-c", inner + "; echo done"})
	if !strings.Contains(out, "done") {
		t.Fatalf("the outer session did not finish its command: %q", out)
	}
	if strings.Contains(out, "were killed") {
		t.Errorf("the outer session's end killed processes: %q", out)
	}
	server := b.serverPID()
	if server == 0 {
		t.Fatalf("server B does not run after the outer session ended (outer: %q)", out)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	sleeper, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	sleeperStart := proc.StartTime(sleeper)
	defer func() {
		// Whatever failed, leave nothing behind: the inner session's process, then B.
		if sleeperStart != 0 && proc.StartTime(sleeper) == sleeperStart {
			syscall.Kill(sleeper, syscall.SIGKILL)
		}
	}()
	if v, ok := proc.Getenv(server, reaper.EnvSession); ok {
		t.Errorf("server B carries %s=%s", reaper.EnvSession, v)
	}
	if v, _ := proc.Getenv(server, reaper.EnvServer); v != "1" {
		t.Errorf("server B's environment has %s=%q, want 1", reaper.EnvServer, v)
	}
	reaperA := 0 // A's reaper, B's parent once its client exited (with a subreaper)
	if st, err := proc.Stat(server); err == nil {
		t.Logf("server B %d: parent %d (%s)", server, st.PPID, proc.CommandLine(st.PPID))
		if proctest.IsReaper(st.PPID) {
			reaperA = st.PPID
		}
	}

	// A's shutdown sweeps everything under its reaper but B; the reaper exits once its
	// sweep is over.
	stopA()
	if reaperA != 0 {
		svWait(t, "the exit of A's reaper", func() bool { return proctest.Exited(reaperA) })
	}
	if proctest.Exited(server) || b.serverPID() != server {
		t.Fatalf("server B %d did not survive server A's shutdown", server)
	}
	if proc.StartTime(sleeper) != sleeperStart {
		t.Fatalf("the inner session's process %d did not survive", sleeper)
	}
	if ls := b.ok("ls"); !strings.Contains(ls, "inner") || !strings.Contains(ls, "running") {
		t.Errorf("server B does not list its running session: %q", ls)
	}

	b.ok("kill-server")
	svWait(t, "server B's exit", func() bool { return proctest.Exited(server) })
	svWait(t, "the inner session's end", func() bool { return proc.StartTime(sleeper) != sleeperStart })
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
