package ptyhub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/server"
)

// rmSSHD is a private OpenSSH server on 127.0.0.1, as OpenSSH's regress/test-exec.sh
// starts one: its own host key, authorized key, known_hosts and a free port. The
// sessions it runs find their ptyhub server through SetEnv (a private socket and state
// directory), and the client finds ptyhub there through PTYHUB_REMOTE.
type rmSSHD struct {
	url    string // ssh://user@127.0.0.1:port
	ssh    string // PTYHUB_SSH: ssh with this test's key and known_hosts, host keys checked
	remote *svHub // the remote side's server (its socket, for cleanup and checks)
	home   string // the user's home directory (where remote sessions start)
	dir    string
}

func rmStartSSHD(t *testing.T) *rmSSHD {
	t.Helper()
	sshd, err := osexec.LookPath("sshd")
	if err != nil {
		for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
			if _, serr := os.Stat(p); serr == nil {
				sshd, err = p, nil
			}
		}
	}
	_, kerr := osexec.LookPath("ssh-keygen")
	if err != nil || kerr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("sshd or ssh-keygen missing (Debian: openssh-server); CI installs it in .ci/run")
		}
		t.Skip("sshd or ssh-keygen missing (Debian: apt-get install openssh-server)")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keygen := func(path string) string {
		if out, err := osexec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
		pub, err := os.ReadFile(path + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(pub))
	}
	hostPub := keygen(filepath.Join(dir, "host_key"))
	userPub := keygen(filepath.Join(dir, "id"))
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), []byte(userPub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory, when run as root
	}
	bin, err := svBinary()
	if err != nil {
		t.Fatal(err)
	}
	remote := &svHub{t: t, bin: bin, socket: filepath.Join(dir, "remote-run", "s.sock")}
	t.Cleanup(remote.stop)
	state := filepath.Join(dir, "remote-state")
	for attempt := 0; ; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		cfg := filepath.Join(dir, "sshd_config")
		conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
SetEnv PTYHUB_SOCKET=%s XDG_STATE_HOME=%s
`, port, filepath.Join(dir, "host_key"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"), remote.socket, state)
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		known := filepath.Join(dir, "known_hosts")
		os.WriteFile(known, []byte(fmt.Sprintf("[127.0.0.1]:%d %s\n", port, hostPub)), 0o600)
		cmd := osexec.Command(sshd, "-D", "-e", "-f", cfg)
		logf, _ := os.Create(filepath.Join(dir, "sshd.log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); logf.Close(); close(exited) }()
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
		})
		// Ready when the port accepts (sshd listens before it logs anything useful).
		ready := false
		for i := 0; i < 200 && !ready; i++ {
			select {
			case <-exited:
				i = 200
				continue
			default:
			}
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				c.Close()
				ready = true
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		if !ready {
			b, _ := os.ReadFile(filepath.Join(dir, "sshd.log"))
			if attempt < 3 {
				continue // another process took the port: choose again
			}
			t.Fatalf("sshd did not start:\n%s", b)
		}
		home, _ := os.UserHomeDir()
		return &rmSSHD{
			url: fmt.Sprintf("ssh://%s@127.0.0.1:%d", u.Username, port),
			ssh: fmt.Sprintf("ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=%s",
				filepath.Join(dir, "id"), known),
			remote: remote, home: home, dir: dir,
		}
	}
}

// hub returns a local ptyhub environment that reaches the sshd with PTYHUB_SSH and
// PTYHUB_REMOTE (the built binary, as a user with ptyhub outside the remote PATH does).
func (s *rmSSHD) hub(t *testing.T) *svHub {
	h := svNew(t)
	return h.inDir(h.dir, "PTYHUB_SSH="+s.ssh, "PTYHUB_REMOTE="+h.bin)
}

// The CLI against a real sshd: exec runs on the host (in its home, not in the local
// directory), ls/write/read/screen/kill/rm see the host's sessions and not the local
// ones, attach works in raw mode with detach keys, and errors name the host.
func TestRemoteSSHCLI(t *testing.T) {
	t.Parallel()
	s := rmStartSSHD(t)
	h := s.hub(t)

	// The first exec waits as long as the command takes (it returns at the exit): bash -c
	// over ssh, with SSH_CLIENT set and SHLVL 0, reads the host's ~/.bashrc (Debian's
	// bash does), and a heavy one (pyenv init on a loaded machine) takes 5-10 s and more
	// before the command runs.
	out := h.ok("--host", s.url, "exec", "--yield", "2m", "-c", "echo hi-$((40+2)); pwd")
	if !strings.Contains(out, "hi-42") || !strings.Contains(out, s.home) || strings.Contains(out, "my proj") {
		t.Errorf("exec over ssh printed:\n%s\nwant hi-42 and the remote home %s", out, s.home)
	}
	if s.remote.serverPID() == 0 {
		t.Fatal("no server runs behind the sshd: the session ran elsewhere")
	}
	if h.serverPID() != 0 {
		t.Error("a local server was started for a remote command")
	}
	// The hint for a session left running names the host, or it would reach the local server.
	_, errs, _ := h.run("--host", s.url, "exec", "--yield", "0s", "--", "sleep", "300")
	if m := regexp.MustCompile(`session (\d+) is still running`).FindStringSubmatch(errs); m == nil ||
		!strings.Contains(errs, "'ptyhub --host "+s.url+" kill "+m[1]+"'") {
		t.Errorf("exec --host left a session running and said: %q", errs)
	} else {
		h.ok("--host", s.url, "rm", m[1])
	}

	id, uuid := h.inDir(h.dir, "PTYHUB_HOST="+s.url).shell()
	if out := h.ok("ls", "--host", s.url); !strings.Contains(out, "bash --norc") {
		t.Errorf("ls --host does not show the remote shell:\n%s", out)
	}
	if out := h.ok("ls"); strings.Contains(out, "bash --norc") {
		t.Errorf("the local ls shows the remote shell:\n%s", out)
	}
	if out := h.ok("--host", s.url, "write", id, "echo typed-$((6*7))\n", "--wait-for", "typed-42"); !strings.Contains(out, "typed-42") {
		t.Errorf("write over ssh:\n%s", out)
	}
	if out := h.ok("--host", s.url, "read", id); !strings.Contains(out, "typed-42") {
		t.Errorf("read over ssh:\n%s", out)
	}
	if out := h.ok("--host", s.url, "screen", id); !strings.Contains(out, "typed-42") {
		t.Errorf("screen over ssh:\n%s", out)
	}

	// attach: raw mode, a resize, typing, the detach key.
	tm := h.attach(30, 100, true, "--host", s.url, id)
	off := tm.waitFor(0, svRepainted)
	tm.typ("stty size; echo att-$((1+1))\r")
	tm.waitFor(off, "30 100")
	off = tm.waitFor(off, "att-2")
	// A window resize travels over ssh too.
	tm.resize(off, 40, 120)
	tm.typ("\x1d")
	if code := tm.wait(); code != 0 {
		t.Errorf("attach exited %d", code)
	}
	tm.sane()

	if out := h.ok("--host", s.url, "kill", id); !strings.Contains(out, id) {
		t.Errorf("kill over ssh: %s", out)
	}
	svWait(t, "the remote session's processes to end", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+uuid)) == 0 })
	h.ok("--host", s.url, "rm", id)
	if out := h.ok("--host", s.url, "ls"); strings.Contains(out, "bash --norc") {
		t.Errorf("rm over ssh left it listed:\n%s", out)
	}
	// logs: the host's server reads the transcript on the host, even of a removed session.
	if out := h.ok("--host", s.url, "logs", uuid); !strings.Contains(out, "typed-42") || !strings.Contains(out, "att-2") {
		t.Errorf("logs over ssh:\n%s", out)
	}
	if out := h.ok("--host", s.url, "logs", "--all"); !strings.Contains(out, uuid) {
		t.Errorf("logs --all over ssh does not list %s:\n%s", uuid, out)
	}
	if out := h.ok("--host", s.url, "logs", "--cast", uuid); !strings.HasPrefix(out, filepath.Join(s.dir, "remote-state")) {
		t.Errorf("logs --cast over ssh names %q, not the host's transcript", out)
	}

	// ptyhub missing on the host: the error names the host and how to install it.
	_, errs, code := h.inDir(h.dir, "PTYHUB_REMOTE=/nonexistent/ptyhub").run("--host", s.url, "ls")
	if code == 0 || !strings.Contains(errs, "not installed on host "+s.url) || !strings.Contains(errs, "go install") {
		t.Errorf("ptyhub missing on the host: status %d, stderr %q", code, errs)
	}
	// ssh failing (an unknown host key: ptyhub never turns checking off): ssh's words.
	empty := filepath.Join(s.dir, "empty_known_hosts")
	os.WriteFile(empty, nil, 0o600)
	bad := strings.Replace(s.ssh, "UserKnownHostsFile=", "UserKnownHostsFile="+empty+" -o X=", 1)
	bad = strings.Replace(bad, " -o X="+filepath.Join(s.dir, "known_hosts"), "", 1)
	_, errs, code = h.inDir(h.dir, "PTYHUB_SSH="+bad).run("--host", s.url, "ls")
	if code == 0 || !strings.Contains(errs, "ssh to host") || !strings.Contains(errs, "Host key verification failed") {
		t.Errorf("unknown host key: status %d, stderr %q", code, errs)
	}
}

// MCP against a real sshd: exec_command {host} gives a HOST:ID that every tool takes,
// list_sessions covers both machines, a killed ssh drops the connection without losing
// the session (the next call reconnects and finds it), and the agent's exit ends it.
func TestRemoteSSHMCP(t *testing.T) {
	t.Parallel()
	s := rmStartSSHD(t)
	h := s.hub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := osexec.Command(h.bin, "mcp")
	cmd.Env = h.env
	cmd.Dir = h.dir
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "rm-test", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := toolCaller(t, ctx, cs)
	local := call("exec_command", map[string]any{"cmd": "sleep 600", "yield_time_ms": 0})
	sc := call("exec_command", map[string]any{"host": s.url, "argv": []string{"bash", "--norc", "--noprofile", "-i"},
		"env": map[string]string{"PS1": "$ "}, "wait_for": `\$ $`})
	id, uuid := sc["session_id"].(string), sc["uuid"].(string)
	if !strings.HasPrefix(id, s.url+":") {
		t.Fatalf("remote session id %q does not read HOST:ID", id)
	}
	sc = call("write_stdin", map[string]any{"session_id": id, "chars": "pwd; echo mcp-$((2*21))\n", "wait_for": "mcp-42"})
	if out := sc["output"].(string); !strings.Contains(out, "mcp-42") || !strings.Contains(out, s.home) {
		t.Errorf("write_stdin over ssh: %q", out)
	}
	list := call("list_sessions", nil)
	b, _ := json.Marshal(list)
	if !strings.Contains(string(b), `"`+id+`"`) || !strings.Contains(string(b), `"`+local["session_id"].(string)+`"`) {
		t.Errorf("list_sessions does not cover both machines: %s", b)
	}

	// Drop the connection in the middle of a call: the call returns an error (nothing
	// hangs), the session goes on, and the next call reconnects and finds it.
	marker := filepath.Join(s.dir, "in-flight")
	type answer struct {
		sc  map[string]any
		msg string
	}
	inflight := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_stdin", Arguments: map[string]any{
			"session_id": id, "chars": "touch " + marker + "; sleep 600\n", "yield_time_ms": 600000}})
		a := answer{}
		if err != nil {
			a.msg = err.Error()
		} else if res.IsError {
			a.msg = res.Content[0].(*mcp.TextContent).Text
		} else {
			a.sc = res.StructuredContent.(map[string]any)
		}
		inflight <- a
	}()
	svWait(t, "the call to be running on the host", func() bool { _, err := os.Stat(marker); return err == nil })
	ssh := rmChildSSHs(t, cmd.Process.Pid, nil)
	for pid := range ssh {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if a := <-inflight; a.sc != nil || !strings.Contains(a.msg, "dropped") || !strings.Contains(a.msg, "keep running") {
		t.Errorf("the call whose connection dropped: %v %q", a.sc, a.msg)
	}
	sc = call("write_stdin", map[string]any{"session_id": id, "chars": "\x03echo back-$((5+5))\n", "wait_for": "back-10"})
	if !strings.Contains(sc["output"].(string), "back-10") {
		t.Errorf("after reconnecting: %q", sc["output"])
	}
	rmChildSSHs(t, cmd.Process.Pid, ssh) // a new ssh connection
	// wait_sessions across both machines: the remote session that exits wins.
	quick := call("exec_command", map[string]any{"host": s.url, "cmd": "read x; echo quick-$x", "yield_time_ms": 0})
	call("write_stdin", map[string]any{"session_id": quick["session_id"], "chars": "7\n", "yield_time_ms": 0})
	sc = call("wait_sessions", map[string]any{"session_ids": []string{quick["session_id"].(string), local["session_id"].(string)},
		"until": []string{"exit"}, "timeout_ms": 120000})
	if sc["session_id"] != quick["session_id"] || sc["state"] != "exited" {
		t.Errorf("wait_sessions over both machines: %v", sc)
	}
	// A local session that ends is reported by calls to the host too.
	h.ok("kill", local["session_id"].(string))
	reported := false
	for deadline := time.Now().Add(30 * time.Second); !reported && time.Now().Before(deadline); {
		sc = call("write_stdin", map[string]any{"session_id": id, "yield_time_ms": 0})
		b, _ := json.Marshal(sc["ended_since_last_call"])
		reported = strings.Contains(string(b), `"session_id":"`+local["session_id"].(string)+`"`)
	}
	if !reported {
		t.Error("the local session's end never reached the agent through calls to the host")
	}
	sc = call("kill_session", map[string]any{"session_id": id, "signal": "INT"})
	if sc["session_id"] != id {
		t.Errorf("kill_session answered for %v, want %s", sc["session_id"], id)
	}

	// The agent goes away: its sessions end on both machines.
	cs.Close()
	svWait(t, "the agent's remote session to end with the agent", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+uuid)) == 0 })
	svWait(t, "the agent's local session to end with the agent", func() bool {
		return len(proctest.WithEnv("PTYHUB_SESSION="+local["uuid"].(string))) == 0
	})
}

// rmChildSSHs returns the pids of the ssh processes that process pid runs (each joins
// it to a host: ptyhub mcp has its own, and one more once the per-user server asks it
// about that host), once there is at least one not in old.
func rmChildSSHs(t *testing.T, pid int, old map[int]bool) map[int]bool {
	t.Helper()
	var found map[int]bool
	svWait(t, "ptyhub mcp's ssh", func() bool {
		found = map[int]bool{}
		fresh := false
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, c := range strings.Fields(string(b)) {
				cpid, _ := strconv.Atoi(c)
				argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cpid))
				if strings.HasPrefix(string(argv), "ssh\x00") && strings.Contains(string(argv), "dial-stdio") && !proctest.Exited(cpid) {
					found[cpid] = true
					fresh = fresh || !old[cpid]
				}
			}
		}
		return fresh
	})
	return found
}

// docker:// and kube:// for real, through stand-ins for docker and kubectl on this
// machine that check the argv they get and run the rest, as `docker exec -i` and
// `kubectl exec -i` run it in a container; a hosts.json program host the same way; and
// a host whose ptyhub speaks another protocol.
func TestRemoteStandIns(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	dir := t.TempDir()
	remote := &svHub{t: t, bin: h.bin, socket: filepath.Join(dir, "remote-run", "s.sock")}
	t.Cleanup(remote.stop)
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	far := fmt.Sprintf("export PTYHUB_SOCKET=%q XDG_STATE_HOME=%q\n", remote.socket, filepath.Join(dir, "remote-state"))
	os.WriteFile(filepath.Join(bin, "docker"), []byte(`#!/bin/sh
[ "$1 $2 $3" = "exec -i web-1" ] || { echo "docker stand-in: unexpected arguments: $*" >&2; exit 2; }
shift 3
`+far+`exec "$@"
`), 0o755)
	os.WriteFile(filepath.Join(bin, "kubectl"), []byte(`#!/bin/sh
[ "$*" = "exec -i -n dev pod-7 -c app -- $PTYHUB_REMOTE dial-stdio" ] || { echo "kubectl stand-in: unexpected arguments: $*" >&2; exit 2; }
shift 8
`+far+`exec "$@"
`), 0o755)
	cfg := filepath.Join(dir, "config")
	os.MkdirAll(filepath.Join(cfg, "ptyhub"), 0o700)
	// A frame that refuses any hello for its protocol, as a ptyhub of protocol 99 does.
	refuse := `import json,struct,sys
b=json.dumps({"op":"reply","error":{"kind":"protocol","message":"no"},"body":{"protocol":99,"build":"x/future","pid":1,"running":0}}).encode()
sys.stdout.buffer.write(struct.pack(">I",len(b))+b); sys.stdout.flush()`
	hosts := map[string]any{"hosts": map[string]any{
		"sandbox": map[string]any{"program": "/bin/sh", "args": []string{"-c", far + `exec "$0" dial-stdio`, h.bin}},
		"future":  map[string]any{"program": "python3", "args": []string{"-c", refuse}},
	}}
	b, _ := json.Marshal(hosts)
	os.WriteFile(filepath.Join(cfg, "ptyhub", "hosts.json"), b, 0o600)
	h = h.inDir(h.dir, "PATH="+bin+":"+os.Getenv("PATH"), "PTYHUB_REMOTE="+h.bin, "XDG_CONFIG_HOME="+cfg)

	for _, host := range []string{"docker://web-1", "kube://dev/pod-7/app", "sandbox"} {
		out := h.ok("--host", host, "exec", "-c", "echo on-$((3*3)) $PTYHUB_SOCKET")
		if !strings.Contains(out, "on-9 "+remote.socket) {
			t.Errorf("%s: exec printed %q", host, out)
		}
	}
	if out := h.ok("--host", "sandbox", "ls"); strings.Count(out, "echo on-") != 3 {
		t.Errorf("the host's server does not list the three sessions:\n%s", out)
	}
	if h.serverPID() != 0 {
		t.Error("a local server was started for remote commands")
	}
	// ptyhub mcp --host: exec_command without a host runs there.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := osexec.Command(h.bin, "mcp", "--host", "docker://web-1")
	cmd.Env, cmd.Dir = h.env, h.dir
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "rm-test", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: map[string]any{"cmd": "echo d-$PTYHUB_SOCKET"}})
	if err != nil || res.IsError {
		t.Fatalf("exec_command with mcp --host: %v %+v", err, res)
	}
	if sc := res.StructuredContent.(map[string]any); !strings.HasPrefix(sc["session_id"].(string), "docker://web-1:") || !strings.Contains(sc["output"].(string), "d-"+remote.socket) {
		t.Errorf("exec_command with mcp --host docker://web-1: %v", sc)
	}
	cs.Close()

	_, errs, code := h.run("--host", "future", "ls")
	if code == 0 || !strings.Contains(errs, "host future") || !strings.Contains(errs, "protocol 99") || !strings.Contains(errs, fmt.Sprint("protocol ", server.Protocol)) {
		t.Errorf("protocol mismatch: status %d, stderr %q", code, errs)
	}
}
