package ptyhub_test

import (
	"bufio"
	"io"
	osexec "os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/session"
)

// TestReaperKilledAlone: kill -9 of a manager's reaper alone, with a session running a
// leader that ignores SIGHUP, a nohup job and a setsid escaper. The manager kills all
// three (nothing is left orphaned), the session ends with that reason in its result, the
// next result of the client says the reaper died, and the next exec runs normally in a
// new reaper — not exit code 127 "reaper: helper process is gone".
func TestReaperKilledAlone(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{StateDir: t.TempDir()})
	r := exec(t, c, session.ExecRequest{
		Cmd:     `trap '' HUP; nohup sleep 1000 >/dev/null 2>&1 & a=$!; setsid sleep 1000 </dev/null >/dev/null 2>&1 & b=$!; echo "pids $$ $a $b"; while :; do sleep 1000; done`,
		WaitFor: `pids \d+ \d+ \d+`, YieldTimeMs: new(int64(30000))})
	if r.ReturnedBecause != session.BecausePattern {
		t.Fatalf("session did not start: %+v", r)
	}
	f := strings.Fields(r.Output[strings.Index(r.Output, "pids "):])
	var pids []int
	starts := map[int]uint64{}
	for _, s := range f[1:4] {
		pid, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("pids in %q: %v", r.Output, err)
		}
		pids = append(pids, pid)
		starts[pid] = proc.StartTime(pid)
	}
	reaperPid := proctest.KillReaperOf(t, pids[0])

	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(30000))})
	if r.State != session.StateExited {
		t.Fatalf("the session still runs after its reaper died: %+v", r)
	}
	// Every process of the session is gone: none runs with the start time it had (a
	// zombie left to init counts as gone).
	for _, pid := range pids {
		if s := proc.StartTime(pid); s != 0 && s == starts[pid] {
			t.Errorf("process %d (%s) of the session outlived its reaper", pid, proc.CommandLine(pid))
		}
	}
	warns := strings.Join(r.Notices.Warnings, "\n")
	if !strings.Contains(warns, "the reaper) died while the session ran") {
		t.Errorf("the session's result does not say why it ended: %q", warns)
	}
	if !strings.Contains(warns, "pid "+strconv.Itoa(reaperPid)+") died") {
		t.Errorf("the result does not say the reaper died: %q", warns)
	}

	r2 := exec(t, c, session.ExecRequest{Cmd: "echo after", YieldTimeMs: new(int64(30000))})
	if r2.ExitCode == nil || *r2.ExitCode != 0 || !strings.Contains(r2.Output, "after") {
		t.Errorf("exec after the reaper died: %s %q", exitOf(r2), r2.Output)
	}
	if w := strings.Join(r2.Notices.Warnings, "\n"); strings.Contains(w, "died") {
		t.Errorf("the reaper's death is told twice: %q", w)
	}
}

// TestAgentAndReaperKilledSweptAtStart: an agent (ptyhub mcp) and its reaper die together
// (SIGKILL to both) while a session runs a job that ignores SIGHUP and SIGTERM. The next
// agent ends that job as it starts, before any tool call of its own.
func TestAgentAndReaperKilledSweptAtStart(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	agent := func() (*osexec.Cmd, io.WriteCloser, *bufio.Reader) {
		cmd := osexec.Command(h.bin, "mcp")
		cmd.Env, cmd.Dir = h.env, h.dir
		in, out := testtool.StartPiped(t, cmd)
		t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
		return cmd, in, bufio.NewReader(out)
	}
	first, in, out := agent()
	// The job itself says READY once its trap is set: a READY from the parent shell could
	// come before the job ran its trap, and the hangup would then end it too.
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"(trap '' HUP TERM; echo READY; exec sleep 1000) & sleep 1000","wait_for":"READY","yield_time_ms":30000}}}`,
	} {
		if _, err := io.WriteString(in, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	uuidRe := regexp.MustCompile(`\\?"uuid\\?":\s*\\?"([0-9a-f-]{36})`)
	var uuid string
	for uuid == "" {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the agent's answers: %v", err)
		}
		if strings.Contains(line, `"id":2`) {
			m := uuidRe.FindStringSubmatch(line)
			if m == nil || !strings.Contains(line, "READY") {
				t.Fatalf("exec_command: %s", line)
			}
			uuid = m[1]
		}
	}
	reaperPid := proctest.Reaper(first.Process.Pid)
	if reaperPid == 0 {
		t.Fatal("the agent's reaper was not found")
	}
	syscall.Kill(reaperPid, syscall.SIGKILL)
	syscall.Kill(first.Process.Pid, syscall.SIGKILL)
	first.Wait()
	// Only the job that ignores SIGHUP and SIGTERM is left, and nothing of the agent's
	// can end it now.
	svWait(t, "the hangup to pass", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+uuid)) == 1 })
	agent() // no call: its start alone must sweep
	svWait(t, "the next agent to end what was left", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+uuid)) == 0 })
}
