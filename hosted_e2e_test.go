package ptyhub_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
)

// svAgent is an agent: an MCP client driving `ptyhub mcp args…` started in h's project
// directory with h's environment.
type svAgent struct {
	t   *testing.T
	cmd *osexec.Cmd
	cs  *mcp.ClientSession
	ctx context.Context
}

func (h *svHub) agent(args ...string) *svAgent {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	h.t.Cleanup(cancel)
	cmd := osexec.Command(h.bin, append([]string{"mcp"}, args...)...)
	cmd.Env, cmd.Dir = append(h.env, "PWD="+h.dir), h.dir
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hosted-test", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	a := &svAgent{t: h.t, cmd: cmd, cs: cs, ctx: ctx}
	h.t.Cleanup(func() { cs.Close() })
	return a
}

// call calls a tool and returns its structured result; a tool error fails the test.
func (a *svAgent) call(name string, args map[string]any) map[string]any {
	a.t.Helper()
	return toolCaller(a.t, a.ctx, a.cs)(name, args)
}

// toolCaller returns a function that calls a tool on cs and returns its structured
// result; an error or a tool error fails t.
func toolCaller(t *testing.T, ctx context.Context, cs *mcp.ClientSession) func(name string, args map[string]any) map[string]any {
	return func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %+v", name, args, err, res)
		}
		return res.StructuredContent.(map[string]any)
	}
}

// list returns the ids of the sessions an agent's list_sessions (or ptyhub ls) shows.
func listIDs(sessions []any) []string {
	var ids []string
	for _, s := range sessions {
		ids = append(ids, s.(map[string]any)["session_id"].(string))
	}
	return ids
}

func (h *svHub) lsIDs() (ids []string, l session.ListResult) {
	h.t.Helper()
	if err := json.Unmarshal([]byte(h.ok("ls", "--json")), &l); err != nil {
		h.t.Fatal(err)
	}
	for _, in := range l.Sessions {
		ids = append(ids, in.SessionID)
	}
	return ids, l
}

// An agent's sessions run in its ptyhub mcp process, which serves them on a socket next
// to the server's; the human's CLI reaches them through the server as if they were the
// server's own (ls, write by id and by name, read, logs, status, rm), the agent reaches
// the human's (list, kill, a wait over both), ids are never shared, and when the agent
// goes its sessions and its socket go with it.
func TestHostedSessions(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	a := h.agent()
	host := server.HostSocket(h.socket, a.cmd.Process.Pid)
	sh := a.call("exec_command", map[string]any{"argv": []string{"bash", "--norc", "--noprofile", "-i"},
		"env": map[string]string{"PS1": "$ "}, "wait_for": `\$ $`, "name": "agentsh"})
	shID, shUUID := sh["session_id"].(string), sh["uuid"].(string)
	seq := a.call("exec_command", map[string]any{"cmd": "seq 1 5"})
	seqID := seq["session_id"].(string)
	if seq["state"] != "exited" {
		t.Fatalf("seq: %v", seq)
	}
	if fi, err := os.Stat(host); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("host socket %s: %v %v", host, fi, err)
	}
	// A session of the human's, in the server.
	out, _, _ := h.run("exec", "--json", "--yield", "0", "--", "sleep", "1000") // 124: still running
	var cli session.Result
	if err := json.Unmarshal([]byte(out), &cli); err != nil {
		t.Fatal(err)
	}

	ids, l := h.lsIDs()
	for _, id := range []string{shID, seqID, cli.SessionID} {
		if !slices.Contains(ids, id) {
			t.Errorf("ptyhub ls %v lacks session %s", ids, id)
		}
	}
	if len(ids) != 3 || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 3 {
		t.Errorf("ids %v: want three distinct", ids)
	}
	for _, in := range l.Sessions {
		if in.SessionID == shID && (in.Name != "agentsh" || in.Owner != "mcp" || in.State != session.StateRunning) {
			t.Errorf("the agent's shell as listed: %+v", in)
		}
	}

	// The human types into the agent's shell by id and by name, and reads it.
	h.ok("write", "--wait-for", "from-human-42", shID, "echo from-human-$((6*7))\n")
	h.ok("write", "--wait-for", "by-name-9", "agentsh", "echo by-name-$((4+5))\n")
	if got := h.ok("read", shID); !strings.Contains(got, "from-human-42") || !strings.Contains(got, "by-name-9") {
		t.Errorf("ptyhub read of the agent's shell: %q", got)
	}
	// The agent still gets what the human's writes printed, and is told someone typed.
	poll := a.call("write_stdin", map[string]any{"session_id": shID, "wait_for": `by-name-9`, "yield_time_ms": 30000})
	if out, _ := poll["output"].(string); !strings.Contains(out, "from-human-42") || !strings.Contains(out, "by-name-9") {
		t.Errorf("the agent's poll after the human's writes: %q", out)
	}
	if n, _ := poll["human_input_bytes"].(float64); n == 0 {
		t.Errorf("the agent is not told the human typed: %v", poll)
	}
	if got := h.ok("logs", seqID); !strings.HasPrefix(got, "1\n2\n3\n4\n5\n") {
		t.Errorf("ptyhub logs of the agent's finished session: %q", got)
	}
	var st server.Status
	if err := json.Unmarshal([]byte(h.ok("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Hosts) != 1 || st.Hosts[0].PID != a.cmd.Process.Pid || st.Hosts[0].Running != 1 {
		t.Errorf("status hosts: %+v", st.Hosts)
	}

	// The agent sees the human's session too, and waits on one of its own and the
	// human's at once: the human's ends first.
	al := a.call("list_sessions", nil)
	if got := listIDs(al["sessions"].([]any)); !slices.Contains(got, cli.SessionID) || !slices.Contains(got, shID) || len(got) != 3 {
		t.Errorf("list_sessions: %v", got)
	}
	waited := make(chan map[string]any, 1)
	go func() {
		res, err := a.cs.CallTool(a.ctx, &mcp.CallToolParams{Name: "wait_sessions", Arguments: map[string]any{
			"session_ids": []string{shID, cli.SessionID}, "until": []string{"exit"}, "timeout_ms": 120000}})
		if err != nil || res.IsError {
			t.Errorf("wait_sessions: %v %+v", err, res.Content[0])
			waited <- nil
			return
		}
		waited <- res.StructuredContent.(map[string]any)
	}()
	// The wait has begun once the human's session is watched; killing it before is
	// fine too (a wait returns for a session that already exited).
	h.ok("kill", cli.SessionID)
	if w := <-waited; w != nil && (w["session_id"] != cli.SessionID || w["returned_because"] != "exit") {
		t.Errorf("wait over both processes returned %v", w)
	}
	kr := a.call("kill_session", map[string]any{"session_id": cli.SessionID, "remove": true})
	if kr["removed"] != true {
		t.Errorf("the agent removing the human's session: %v", kr)
	}

	h.ok("rm", seqID)
	if got := listIDs(a.call("list_sessions", nil)["sessions"].([]any)); slices.Contains(got, seqID) || slices.Contains(got, cli.SessionID) {
		t.Errorf("after rm, list_sessions: %v", got)
	}

	// The agent goes: its sessions end, its socket goes, the human no longer lists them.
	a.cs.Close()
	svWait(t, "the agent's shell to end with it", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+shUUID)) == 0 })
	svWait(t, "the host socket to go", func() bool { _, err := os.Stat(host); return os.IsNotExist(err) })
	if ids, _ := h.lsIDs(); len(ids) != 0 {
		t.Errorf("after the agent left, ptyhub ls: %v", ids)
	}
}

// A host that died without cleaning up (SIGKILL) left its socket: its reaper ended its
// sessions, and the next listing removes the socket. A host that is stopped (the agent
// was suspended) costs a listing a warning, not the listing.
func TestHostedDeadAndStoppedHosts(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	dead := h.agent()
	r := dead.call("exec_command", map[string]any{"argv": []string{"sleep", "1000"}, "yield_time_ms": 0})
	uuid := r["uuid"].(string)
	deadSock := server.HostSocket(h.socket, dead.cmd.Process.Pid)
	dead.cmd.Process.Kill()
	svWait(t, "the killed host's session to end", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+uuid)) == 0 })
	if _, err := os.Stat(deadSock); err != nil {
		t.Fatalf("the killed host's socket is already gone: %v", err)
	}
	// A socket file of a process that never listened (the name of a dead pid).
	gone := osexec.Command("true")
	gone.Run()
	staleSock := server.HostSocket(h.socket, gone.Process.Pid)
	os.MkdirAll(filepath.Dir(h.socket), 0o700)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: staleSock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()

	stopped := h.agent()
	sr := stopped.call("exec_command", map[string]any{"argv": []string{"sleep", "1000"}, "yield_time_ms": 0})
	pid := stopped.cmd.Process.Pid
	syscall.Kill(pid, syscall.SIGSTOP)
	defer syscall.Kill(pid, syscall.SIGCONT)
	out, _, code := h.run("ls")
	if code != 0 || !strings.Contains(out, "ptyhub mcp (pid "+strconv.Itoa(pid)+")") {
		t.Errorf("ls with a stopped host: status %d\n%s", code, out)
	}
	for _, s := range []string{deadSock, staleSock} {
		if _, err := os.Stat(s); !os.IsNotExist(err) {
			t.Errorf("the socket of dead pid %s is still there (%v)", s, err)
		}
	}
	syscall.Kill(pid, syscall.SIGCONT)
	if ids, _ := h.lsIDs(); !slices.Contains(ids, sr["session_id"].(string)) {
		t.Errorf("the continued host's session is not listed: %v", ids)
	}
}
