package ptyhub_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/pty"
	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
)

// svBinDir holds the binary svBinary built ("" before), for TestMain to remove.
var svBinDir string

// svBinary builds the ptyhub binary once for the server tests, into a directory any
// user may read (the foreign-uid test runs it as nobody).
var svBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ptyhub-sv-bin")
	if err != nil {
		return "", err
	}
	svBinDir = dir // removed by TestMain
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "ptyhub")
	out, err := testtool.GoBuild(bin, "./cmd/ptyhub").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// svHub is one test's private server: its socket and state directory, the environment
// that points the CLI at them, and the project directory the CLI runs in (not the
// repository, and with a space in its path, as users have).
type svHub struct {
	t      *testing.T
	bin    string
	socket string
	env    []string
	dir    string
}

// svNew returns a private server environment; the server (started by the first command)
// is stopped with SIGTERM at cleanup.
func svNew(t *testing.T) *svHub {
	t.Helper()
	bin, err := svBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := &svHub{t: t, bin: bin, socket: filepath.Join(dir, "run", "s.sock"), dir: filepath.Join(dir, "my proj")}
	if err := os.Mkdir(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.env = append(os.Environ(), "PTYHUB_SOCKET="+h.socket, "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	t.Cleanup(h.stop)
	return h
}

// inDir returns a copy of h whose commands run in dir (as after `cd dir`) with extra
// environment variables.
func (h *svHub) inDir(dir string, extraEnv ...string) *svHub {
	c := *h
	c.dir = dir
	c.env = append(append([]string(nil), h.env...), extraEnv...)
	return &c
}

// serverPID reads the running server's pid from its lock file (0: none).
func (h *svHub) serverPID() int {
	b, _ := os.ReadFile(h.socket + ".lock")
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || syscall.Kill(pid, 0) != nil || proctest.Exited(pid) {
		return 0
	}
	return pid
}

func (h *svHub) stop() {
	if pid := h.serverPID(); pid > 0 {
		syscall.Kill(pid, syscall.SIGTERM)
		svWait(h.t, "server exit", func() bool { return syscall.Kill(pid, 0) != nil || proctest.Exited(pid) })
	}
}

// run runs ptyhub args as a user types it, and returns stdout, stderr and the status.
func (h *svHub) run(args ...string) (string, string, int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, h.bin, args...)
	cmd.Env = append(h.env, "PWD="+h.dir) // a shell's cd sets PWD
	cmd.Dir = h.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *osexec.ExitError
	if err != nil && !errors.As(err, &ee) {
		h.t.Fatalf("ptyhub %q: %v", args, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// ok runs ptyhub args and fails the test unless it exits 0.
func (h *svHub) ok(args ...string) string {
	h.t.Helper()
	out, errs, code := h.run(args...)
	if code != 0 {
		h.t.Fatalf("ptyhub %q: status %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	return out
}

// shell starts an interactive bash session with prompt "$ " and returns its id.
func (h *svHub) shell(extraEnv ...string) (id, uuid string) {
	h.t.Helper()
	args := []string{"exec", "--json", "--wait-for", `\$ $`, "--env", "PS1=$ "}
	for _, e := range extraEnv {
		args = append(args, "--env", e)
	}
	out := h.ok(append(args, "--", "bash", "--norc", "--noprofile", "-i")...)
	var r session.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.State != session.StateRunning {
		h.t.Fatalf("exec bash: %v %s", err, out)
	}
	return r.SessionID, r.UUID
}

// svRepainted is what every repaint of an attach begins with (clear the screen).
const svRepainted = "\x1b[2J"

// svTerm is a real terminal (a pty) with a program in it, as a user's terminal window.
type svTerm struct {
	t      *testing.T
	master *pty.Master
	slave  *os.File
	cmd    *osexec.Cmd
	exited chan struct{}

	mu     sync.Mutex
	screen bytes.Buffer // everything the program printed
	update chan struct{}
}

// attach opens a rows×cols terminal running `ptyhub attach args…`. read says whether
// the test reads the terminal (false: a stalled terminal nobody reads).
func (h *svHub) attach(rows, cols int, read bool, args ...string) *svTerm {
	h.t.Helper()
	return h.terminal(rows, cols, read, append([]string{"attach"}, args...)...)
}

// terminal opens a rows×cols terminal running `ptyhub args…` (see attach).
func (h *svHub) terminal(rows, cols int, read bool, args ...string) *svTerm {
	h.t.Helper()
	master, slave, err := pty.Open(rows, cols)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := osexec.Command(h.bin, args...)
	cmd.Env = append(h.env, "PWD="+h.dir)
	cmd.Dir = h.dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	tm := &svTerm{t: h.t, master: master, slave: slave, cmd: cmd, exited: make(chan struct{}), update: make(chan struct{})}
	go func() { cmd.Wait(); close(tm.exited) }()
	if read {
		// The terminal's reader: owned by the test, ends when the master is closed.
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := master.Read(buf)
				tm.mu.Lock()
				tm.screen.Write(buf[:n])
				close(tm.update)
				tm.update = make(chan struct{})
				tm.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	h.t.Cleanup(func() {
		select {
		case <-tm.exited:
		default:
			cmd.Process.Kill()
			<-tm.exited
		}
		master.Close()
		slave.Close()
	})
	return tm
}

// waitFor waits until the terminal shows want after offset from; it returns the offset
// just past it.
func (tm *svTerm) waitFor(from int, want string) int {
	tm.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		tm.mu.Lock()
		b := tm.screen.Bytes()
		i := -1
		if from <= len(b) {
			i = bytes.Index(b[from:], []byte(want))
		}
		ch := tm.update
		tm.mu.Unlock()
		if i >= 0 {
			return from + i + len(want)
		}
		select {
		case <-ch:
		case <-deadline:
			tm.mu.Lock()
			s := tm.screen.String()
			tm.mu.Unlock()
			tm.t.Fatalf("terminal never showed %q; it shows:\n%q", want, s[max(0, len(s)-2000):])
		}
	}
}

// resize resizes the terminal (the kernel sends SIGWINCH to ptyhub attach) and returns,
// with the offset past it, once the shell of the attached session reports the new size
// (`stty size`, asked again after each prompt: the resize travels asynchronously).
func (tm *svTerm) resize(off, rows, cols int) int {
	tm.t.Helper()
	if err := tm.master.SetSize(rows, cols); err != nil {
		tm.t.Fatal(err)
	}
	want := fmt.Sprintf("%d %d", rows, cols)
	for i := 0; ; i++ {
		tm.typ("stty size\r")
		n := tm.waitFor(off, "$ ")
		tm.mu.Lock()
		got := strings.Contains(tm.screen.String()[off:n], want)
		tm.mu.Unlock()
		off = n
		if got {
			return off
		}
		if i == 200 {
			tm.t.Fatalf("the session's size never followed the terminal to %s", want)
		}
	}
}

// typ types s at the terminal.
func (tm *svTerm) typ(s string) {
	tm.t.Helper()
	if _, err := tm.master.Write([]byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

// wait waits for the attach client to exit and returns its status.
func (tm *svTerm) wait() int {
	tm.t.Helper()
	select {
	case <-tm.exited:
	case <-time.After(30 * time.Second):
		tm.t.Fatal("ptyhub attach did not exit")
	}
	return tm.cmd.ProcessState.ExitCode()
}

// sane checks that the terminal is back in cooked mode with echo (stty -a run on it).
func (tm *svTerm) sane() {
	tm.t.Helper()
	cmd := osexec.Command("stty", "-a")
	cmd.Stdin = tm.slave
	out, err := cmd.Output()
	if err != nil {
		tm.t.Fatalf("stty -a: %v", err)
	}
	for _, f := range []string{"icanon", "echo", "isig", "icrnl", "opost"} {
		if !bytes.Contains(append(append([]byte(" "), bytes.Join(bytes.Fields(out), []byte(" "))...), ' '), []byte(" "+f+" ")) {
			tm.t.Errorf("terminal not restored: no %q in stty -a:\n%s", f, out)
		}
	}
}

// svWait polls cond (a process state, which has no event to wait on) for up to 20 s.
func svWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The CLI round trip through the server: exec (left running), ls, write, read, kill, rm.
func TestServerCLI(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	id, _ := h.shell()
	out := h.ok("ls")
	if !strings.Contains(out, "ID") || !strings.Contains(out, "bash --norc") || !strings.Contains(out, "running") {
		t.Errorf("ls:\n%s", out)
	}
	out = h.ok("write", id, "echo sum=$((40+2))", "--key", "Enter", "--wait-for", "sum=42")
	if !strings.Contains(out, "sum=42") || !strings.Contains(out, "Process running with session ID "+id) {
		t.Errorf("write:\n%s", out)
	}
	if out = h.ok("read", id, "--tail", "2"); !strings.Contains(out, "sum=42") {
		t.Errorf("read --tail 2:\n%s", out)
	}
	if out = h.ok("read", id, "--raw"); !strings.Contains(out, "sum=42\r\n") {
		t.Errorf("read --raw:\n%q", out)
	}
	var list session.ListResult
	if err := json.Unmarshal([]byte(h.ok("ls", "--json")), &list); err != nil || len(list.Sessions) != 1 || list.Sessions[0].SessionID != id {
		t.Errorf("ls --json: %v %+v", err, list)
	}
	if out = h.ok("exec", "--", "echo", "one-shot"); !strings.Contains(out, "Process exited with code 0") || !strings.Contains(out, "one-shot") {
		t.Errorf("exec echo:\n%s", out)
	}
	if out = h.ok("kill", id, "--signal", "INT"); !strings.Contains(out, "SIGINT") {
		t.Errorf("kill --signal INT:\n%s", out)
	}
	if out = h.ok("kill", id); !strings.Contains(out, "ended") {
		t.Errorf("kill:\n%s", out)
	}
	// The states as list_sessions shows them.
	if out = h.ok("ls"); !strings.Contains(out, "killed(SIGHUP)") || !strings.Contains(out, "exited(0)") || !strings.Contains(out, "LAST-LINE") {
		t.Errorf("ls after kill, want the STATE words of list_sessions:\n%s", out)
	}
	h.ok("rm", id)
	// A removed session is read from its transcript, and says so.
	if _, errs, code := h.run("read", id); code != 0 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "transcript") {
		t.Errorf("read after rm: status %d, stderr %q", code, errs)
	}
	if _, errs, code := h.run("read", "99"); code == 0 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "no such session") {
		t.Errorf("read 99: status %d, stderr %q", code, errs)
	}
	if _, errs, code := h.run("write", "99"); code == 0 || !strings.Contains(errs, "no such session") {
		t.Errorf("write 99: status %d, stderr %q", code, errs)
	}
}

// read -f follows the output until the session ends.
func TestServerReadFollow(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	out, errs, code := h.run("exec", "--yield", "0s", "-c", "read line; echo got-$line; echo done")
	if code != 0 && code != 124 || !strings.Contains(errs, "'ptyhub attach 1'") {
		t.Fatalf("exec: %d\n%s\n%s", code, out, errs)
	}
	cmd := osexec.Command(h.bin, "read", "1", "-f")
	cmd.Env, cmd.Dir = h.env, h.dir
	var fo, fe bytes.Buffer
	cmd.Stdout, cmd.Stderr = &fo, &fe
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.ok("write", "1", "abc\n")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("read -f: %v %s", err, fe.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("read -f did not end with the session")
	}
	if !strings.Contains(fo.String(), "got-abc\ndone\n") || !strings.Contains(fe.String(), "exited with code 0") {
		t.Errorf("read -f: stdout %q stderr %q", fo.String(), fe.String())
	}
}

// Attach in a real terminal: repaint, typing, the size follows the terminal, detach
// leaves the session running and the terminal sane; attaching again repaints.
func TestServerAttach(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	id, _ := h.shell()
	h.ok("write", id, "echo before-$((1+1))\n", "--wait-for", "before-2")

	tm := h.attach(30, 100, true, id)
	off := tm.waitFor(0, "before-2") // the repaint
	// A clipboard write (OSC 52) from the program never reaches the human's terminal.
	tm.typ("printf '\\033]52;c;ZWNobyBwd25lZA==\\007clip%s\\n' -done\r")
	n := tm.waitFor(off, "clip-done")
	tm.mu.Lock()
	if seen := tm.screen.String()[off:n]; strings.Contains(seen, "\x1b]52") {
		t.Errorf("OSC 52 reached the terminal: %q", seen)
	}
	tm.mu.Unlock()
	off = n
	tm.typ("stty size\r")
	off = tm.waitFor(off, "30 100")
	// The user resizes the window.
	off = tm.resize(off, 40, 120)
	tm.typ("\x1d") // ctrl-]
	if code := tm.wait(); code != 0 {
		t.Errorf("attach exit status %d", code)
	}
	tm.waitFor(off, "detached from session "+id)
	tm.sane()
	if out := h.ok("ls"); !strings.Contains(out, "running") {
		t.Errorf("session not running after detach:\n%s", out)
	}
	// The session is the CLI's own: what was typed through attach is not news of
	// "a human" to the CLI's next write (an agent's session is: TestServerAgentAndHuman).
	var r session.Result
	json.Unmarshal([]byte(h.ok("write", id, "--json", "--yield", "0s")), &r)
	if r.HumanInputBytes != 0 {
		t.Errorf("human_input_bytes = %d in the CLI's own session after the CLI's user typed through attach", r.HumanInputBytes)
	}

	// Again: repaint shows the earlier output; ctrl-] twice types it literally.
	tm2 := h.attach(30, 100, true, id)
	off = tm2.waitFor(0, "40 120")
	tm2.typ("cat -v\r")
	off = tm2.waitFor(off, "cat -v")
	tm2.typ("\x1d\x1d\r")
	off = tm2.waitFor(off, "^]")
	tm2.typ("\x04")
	off = tm2.waitFor(off, "$ ")
	tm2.typ("exit\r")
	// The session ends: the client exits at once without another keystroke.
	if code := tm2.wait(); code != 0 {
		t.Errorf("attach exit status %d", code)
	}
	tm2.waitFor(off, "session "+id+" exited with code 0")
	tm2.sane()
}

// SIGTERM or SIGHUP to the attach client restores the terminal.
func TestServerAttachKilled(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	id, _ := h.shell()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		tm := h.attach(24, 80, true, id)
		tm.waitFor(0, svRepainted)
		tm.cmd.Process.Signal(sig)
		tm.wait()
		tm.sane()
	}
	if out := h.ok("ls"); !strings.Contains(out, "running") {
		t.Errorf("session not running:\n%s", out)
	}
}

// Two clients at once; the read-only one cannot type; the split multi-key detach works.
func TestServerAttachTwoClientsReadOnly(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	id, _ := h.shell()
	rw := h.attach(24, 80, true, id, "--detach-keys", "ctrl-p,ctrl-q")
	ro := h.attach(24, 80, true, "--read-only", id)
	rw.waitFor(0, svRepainted)
	roOff := ro.waitFor(0, svRepainted)
	if out := h.ok("ls"); !strings.Contains(out, " 2 ") {
		t.Errorf("ls does not count 2 clients:\n%s", out)
	}
	ro.typ("echo readonly-$((3+4))\r")
	rw.typ("echo writer-$((5+6))\r")
	ro.waitFor(roOff, "writer-11")
	out := h.ok("read", id)
	if strings.Contains(out, "readonly") {
		t.Errorf("a read-only client typed:\n%s", out)
	}
	// ctrl-p alone reaches the program (it is typed when ctrl-q does not follow).
	rw.typ("\x10")
	rw.typ("\x11")
	if code := rw.wait(); code != 0 {
		t.Errorf("rw exit %d", code)
	}
	ro.typ("\x1d")
	ro.wait()
	rw.sane()
	ro.sane()
}

// A terminal that never reads does not slow a 100 MB flood: the flood completes while
// the stalled client stays connected or is dropped.
func TestServerStalledClientFlood(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	id, _ := h.shell()
	stalled := h.attach(24, 80, false, id)
	_ = stalled
	// Wait until the stalled client is attached (ls counts it).
	svWait(t, "the stalled client to attach", func() bool {
		out, _, _ := h.run("ls", "--json")
		return strings.Contains(out, `"clients":1`)
	})
	out := h.ok("write", id, "head -c 100000000 /dev/zero | tr '\\0' a; echo; echo flood-$((40+2))\n",
		"--wait-for", "flood-42", "--yield", "5m", "--max-tokens", "200", "--json")
	var r session.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.ReturnedBecause != session.BecausePattern {
		t.Errorf("flood: %v %.300s", err, out)
	}
	if r.NextOffset < 100_000_000 {
		t.Errorf("next_offset %d after a 100 MB flood", r.NextOffset)
	}
}

// Socket directory 0700, socket 0600; another uid is refused by the directory and,
// where the directory lets it through, by the peer-credential check.
func TestServerSocketSecurity(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	testtool.Need(t, "setpriv")
	h := svNew(t)
	h.ok("ls")
	for path, want := range map[string]os.FileMode{filepath.Dir(h.socket): 0o700 | os.ModeDir, h.socket: 0o600 | os.ModeSocket} {
		st, err := os.Lstat(path)
		if err != nil || st.Mode() != want {
			t.Errorf("%s: mode %v, want %v (%v)", path, st.Mode(), want, err)
		}
	}
	asNobody := func(socket string) (string, int) {
		cmd := osexec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", h.bin, "ls", "--socket", socket)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=/nonexistent"}
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := asNobody(h.socket); code == 0 || !strings.Contains(out, "permission denied") {
		t.Errorf("nobody through the 0700 directory: status %d: %s", code, out)
	}
	// A socket in a 0711 directory: the kernel lets nobody connect; the server must not.
	dir := filepath.Join(t.TempDir(), "open")
	os.Mkdir(dir, 0o711)
	os.Chmod(filepath.Dir(dir), 0o711)
	os.Chmod(filepath.Dir(filepath.Dir(dir)), 0o711)
	sock := filepath.Join(dir, "s.sock")
	srv := osexec.Command(h.bin, "serve", "--socket", sock)
	srv.Env = h.env
	logr, logw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.Stderr = logw
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	logw.Close()
	defer func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait(); logr.Close() }()
	// Wait for "serving", logged once the socket has its final mode: the socket file
	// exists from bind on, and a chmod before the server's own would be undone.
	for br := bufio.NewReader(logr); ; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the second server did not start: %v", err)
		}
		if strings.Contains(line, "serving") {
			break
		}
	}
	go io.Copy(io.Discard, logr)
	os.Chmod(sock, 0o666) // only the peer check is left
	// ptyhub itself, as nobody, refuses a directory that is not nobody's before
	// connecting; a raw client connects, and the server answers with its refusal.
	if out, code := asNobody(sock); code == 0 || !strings.Contains(out, "owned by uid 0") {
		t.Errorf("ptyhub as nobody, socket in root's directory: status %d: %s", code, out)
	}
	testtool.NeedPython(t)
	raw := osexec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "python3", "-c",
		`import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.shutdown(socket.SHUT_WR); b = b""
while True:
    c = s.recv(4096)
    if not c: break
    b += c
sys.stdout.write(b.decode("utf-8", "replace"))`, sock)
	raw.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := raw.CombinedOutput(); err != nil || !strings.Contains(string(out), "does not serve uid 65534") {
		t.Errorf("nobody through the peer check: %v: %s", err, out)
	}
	// A second server on a live socket refuses to start and leaves it alone.
	second := osexec.Command(h.bin, "serve", "--socket", sock)
	second.Env = h.env
	if out, err := second.CombinedOutput(); err == nil || !strings.Contains(string(out), "already running") {
		t.Errorf("second serve: %v %s", err, out)
	}
	if _, err := os.Stat(sock); err != nil {
		t.Errorf("the live socket was removed: %v", err)
	}
}

// kill -9 of the server: no session process survives, and the next command starts a
// fresh server on the same socket.
func TestServerKill9(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	_, uuid := h.shell()
	if _, errs, _ := h.run("exec", "--yield", "0s", "-c", "trap '' HUP TERM; (trap '' HUP TERM; sleep 1000) & setsid sleep 1000 & sleep 1000"); !strings.Contains(errs, "still running") {
		t.Fatalf("exec: %s", errs)
	}
	pid := h.serverPID()
	if pid == 0 || len(proctest.WithEnv("PTYHUB_SESSION="+uuid)) == 0 {
		t.Fatalf("server pid %d, session pids %v", pid, proctest.WithEnv("PTYHUB_SESSION="+uuid))
	}
	var list session.ListResult
	json.Unmarshal([]byte(h.ok("ls", "--json")), &list)
	syscall.Kill(pid, syscall.SIGKILL)
	for _, s := range list.Sessions {
		svWait(t, "session "+s.SessionID+"'s processes to die", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+s.UUID)) == 0 })
	}
	svWait(t, "the server to die", func() bool { return syscall.Kill(pid, 0) != nil || proctest.Exited(pid) })
	out := h.ok("ls", "--json")
	json.Unmarshal([]byte(out), &list)
	if len(list.Sessions) != 0 {
		t.Errorf("a fresh server lists %v", list.Sessions)
	}
	if p := h.serverPID(); p == 0 || p == pid {
		t.Errorf("server pid %d after restart (old %d)", p, pid)
	}
}

// The agent (an MCP client through ptyhub mcp) and a human (the CLI and attach) on one
// session; the agent learns that the human typed. Sessions the agent started end when
// it goes away.
func TestServerAgentAndHuman(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := osexec.Command(h.bin, "mcp")
	cmd.Env, cmd.Dir = append(h.env, "PWD="+h.dir), h.dir
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sv-test", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := toolCaller(t, ctx, cs)
	sc := call("exec_command", map[string]any{"argv": []string{"bash", "--norc", "--noprofile", "-i"},
		"env": map[string]string{"PS1": "$ "}, "wait_for": `\$ $`})
	id, uuid := sc["session_id"].(string), sc["uuid"].(string)
	if out := h.ok("ls"); !strings.Contains(out, "bash --norc") {
		t.Errorf("the human does not see the agent's session:\n%s", out)
	}
	tm := h.attach(24, 80, true, id)
	off := tm.waitFor(0, svRepainted)
	tm.typ("echo human-$((2+3))\r")
	tm.waitFor(off, "human-5")
	sc = call("write_stdin", map[string]any{"session_id": id, "yield_time_ms": 0})
	if n, _ := sc["human_input_bytes"].(float64); n == 0 || !strings.Contains(sc["output"].(string), "human-5") {
		t.Errorf("agent result after human typing: %v", sc)
	}
	tm.typ("\x1d")
	tm.wait()
	cs.Close()
	svWait(t, "the agent's session to end with the agent", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+uuid)) == 0 })
}

// TestServerLogs: `ptyhub logs` reads the transcript on disk — the whole output as text,
// --raw, --cast, a follow that ends with the session, and a session the server has
// forgotten (removed), found by its UUID.
func TestServerLogs(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	out := h.ok("exec", "--json", "-c", `seq 1 3000; printf '\033[31mred\033[0m\n'`)
	var r session.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.State != session.StateExited {
		t.Fatalf("exec: %v %s", err, out)
	}
	var want strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	want.WriteString("red\n")
	// -f returns at the end marker: the transcript is complete after it.
	follow := h.ok("logs", "-f", r.SessionID)
	if !strings.HasPrefix(follow, want.String()) || !strings.Contains(follow, "[session ended: exited with code 0]") {
		t.Errorf("logs -f: %q…", follow[:min(len(follow), 200)])
	}
	if got := h.ok("logs", r.SessionID); got != follow {
		t.Errorf("logs and logs -f differ")
	}
	if raw := h.ok("logs", "--raw", r.SessionID); !strings.Contains(raw, "2999\r\n3000\r\n\x1b[31mred") {
		t.Errorf("logs --raw lacks the raw bytes")
	}
	path := strings.TrimSpace(h.ok("logs", "--cast", r.SessionID))
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 || !strings.HasSuffix(path, r.UUID+".cast") {
		t.Errorf("logs --cast: %q %v", path, err)
	}
	h.ok("rm", r.SessionID)
	if got := h.ok("logs", r.UUID[:13]); got != follow {
		t.Errorf("logs of a removed session by UUID prefix differs")
	}
	if all := h.ok("logs", "--all"); !strings.Contains(all, r.UUID) || !strings.Contains(all, "exited with code 0") {
		t.Errorf("logs --all: %q", all)
	}
	if _, errs, code := h.run("logs", "no-such-session"); code == 0 || !strings.Contains(errs, "no such session, and no transcript of it") ||
		strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Count(errs, "'ptyhub ls'") != 1 {
		t.Errorf("logs of an unknown id: status %d, %q", code, errs)
	}
}

// TestServerAndReaperKilled: the server and its reaper die together (SIGKILL to both), so
// nothing of theirs can end the sessions; jobs that ignore SIGHUP survive the hangup. The
// next server finds them in the registry on disk and ends them.
func TestServerAndReaperKilled(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	// The job says READY itself, once its trap is set (see TestAgentAndReaperKilledSweptAtStart).
	out := h.ok("exec", "--json", "--wait-for", "READY", "-c", "(trap '' HUP TERM; echo READY; exec sleep 1000) & sleep 1000")
	var r session.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.State != session.StateRunning {
		t.Fatalf("exec: %v %s", err, out)
	}
	pid := h.serverPID()
	reaperPid := proctest.Reaper(pid)
	if pid == 0 || reaperPid == 0 {
		t.Fatalf("server %d, reaper %d", pid, reaperPid)
	}
	syscall.Kill(reaperPid, syscall.SIGKILL)
	syscall.Kill(pid, syscall.SIGKILL)
	svWait(t, "the server to die", func() bool { return syscall.Kill(pid, 0) != nil || proctest.Exited(pid) })
	// The job that ignores SIGHUP is still there: only the registry can find it now.
	svWait(t, "the hangup to pass", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+r.UUID)) == 1 })
	h.ok("ls") // starts a fresh server, which sweeps
	svWait(t, "the next server to end what was left", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+r.UUID)) == 0 })
}

// Commands started through the server run in the caller's directory and environment:
// from a project directory with a space in its name, reached through a symbolic link,
// with a PATH, a VIRTUAL_ENV and a variable only this caller has; a relative --cwd
// resolves against the caller's directory; two callers in different directories share
// one server. --embedded and the server give a command the same environment.
func TestServerCallerDirAndEnv(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	link := filepath.Join(filepath.Dir(h.dir), "link to proj")
	if err := os.Symlink(h.dir, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(h.dir, "sub dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(h.dir, "venv bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "hello-caller"), []byte("#!/bin/sh\necho hello from the caller PATH\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	u := h.inDir(link, "PATH="+bin+":"+os.Getenv("PATH"), "VIRTUAL_ENV="+filepath.Dir(bin), "ONLY_HERE=caller-value")
	out := u.ok("exec", "-c", `echo "[$PWD][$(pwd -P)][$VIRTUAL_ENV][$ONLY_HERE]"`)
	if want := fmt.Sprintf("[%s][%s][%s][caller-value]", link, h.dir, h.dir); !strings.Contains(out, want) {
		t.Errorf("exec -c from %s:\n%s\nwant %s", link, out, want)
	}
	if out := u.ok("exec", "--", "hello-caller"); !strings.Contains(out, "hello from the caller PATH") {
		t.Errorf("exec -- hello-caller (on the caller's PATH):\n%s", out)
	}
	if out := u.ok("exec", "--cwd", "sub dir", "-c", "pwd"); !strings.Contains(out, filepath.Join(link, "sub dir")+"\n") {
		t.Errorf("exec --cwd 'sub dir':\n%s", out)
	}
	if _, errs, code := u.run("exec", "--cwd", "nope", "--", "pwd"); code != 2 || !strings.Contains(errs, filepath.Join(link, "nope")) {
		t.Errorf("exec --cwd nope: status %d, stderr %q; want 2 and the resolved path", code, errs)
	}
	// A second caller elsewhere, on the same server.
	other := h.inDir(filepath.Join(h.dir, "sub dir"))
	if out := other.ok("exec", "--", "pwd"); !strings.Contains(out, filepath.Join(h.dir, "sub dir")+"\n") {
		t.Errorf("second caller: pwd:\n%s", out)
	}
	if out := other.ok("exec", "-c", `echo "[${ONLY_HERE-unset}]"`); !strings.Contains(out, "[unset]") {
		t.Errorf("second caller sees the first caller's variable:\n%s", out)
	}

	// The same environment embedded and through the server (PTYHUB_SESSION aside).
	envOf := func(embedded bool) map[string]bool {
		args := []string{"exec", "--no-tty", "--", "env"}
		if embedded {
			args = []string{"exec", "--embedded", "--no-tty", "--", "env"}
		}
		out := u.ok(args...)
		_, body, _ := strings.Cut(out, "Output:\n")
		set := map[string]bool{}
		for _, l := range strings.Split(body, "\n") {
			if l != "" && !strings.HasPrefix(l, "PTYHUB_SESSION=") {
				set[l] = true
			}
		}
		return set
	}
	emb, srv := envOf(true), envOf(false)
	for l := range emb {
		if !srv[l] {
			t.Errorf("embedded has %q, the server's session does not", l)
		}
	}
	for l := range srv {
		if !emb[l] {
			t.Errorf("the server's session has %q, embedded does not", l)
		}
	}
	if !srv["ONLY_HERE=caller-value"] || !srv["PWD="+link] {
		t.Errorf("server environment lacks the caller's variables: %v", srv)
	}
}

// A server whose executable was deleted (what `go run` leaves behind) counts as another
// build: with running sessions it keeps serving and the CLI says so once; it can still
// start its first session (it never needs its executable's path again); with no running
// session the next command replaces it with its own build.
func TestServerReplacesOtherBuild(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	gone := filepath.Join(t.TempDir(), "ptyhub-go-run")
	// Copied by cp, not written here: a child forked meanwhile by another test would
	// inherit this process's open-for-writing fd until its exec, and running the copy
	// would then fail with ETXTBSY ("text file busy").
	if out, err := osexec.Command("cp", h.bin, gone).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	old := *h
	old.bin = gone
	old.ok("ls") // starts a server of the soon-deleted binary, no session yet
	first := h.serverPID()
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	// Its first session, after the deletion (a client that may not replace it).
	c, err := server.Dial(t.Context(), server.DialOptions{Socket: h.socket, Name: "t",
		Caller: &session.Caller{Dir: h.dir, Env: []string{"PATH=/usr/bin:/bin"}}, Warn: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	y := int64(20_000)
	r, err := c.Exec(t.Context(), session.ExecRequest{Cmd: "echo first; exec sleep 1000", WaitFor: "first", YieldTimeMs: &y})
	c.Close(context.Background(), true)
	if err != nil || !strings.Contains(r.Output, "first") || r.State != session.StateRunning {
		t.Fatalf("the deleted build's first session: %v %+v", err, r)
	}
	// Running sessions: kept, with one note.
	out, errs, code := h.run("exec", "--", "echo", "still served")
	if code != 0 || !strings.Contains(out, "still served") || strings.Count(errs, "deleted or replaced") != 1 || !strings.Contains(errs, "kill-server") {
		t.Errorf("exec with the old server running a session: status %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if pid := h.serverPID(); pid != first {
		t.Errorf("server pid %d, want the old %d kept", pid, first)
	}
	h.ok("kill", r.SessionID)
	// No running session: replaced, silently.
	out, errs, code = h.run("exec", "--", "echo", "new server")
	if code != 0 || !strings.Contains(out, "new server") || errs != "" {
		t.Errorf("exec after the old server's sessions ended: status %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if pid := h.serverPID(); pid == first || pid == 0 {
		t.Errorf("server pid %d after replacement, want a new one (old %d)", pid, first)
	}
	if out := h.ok("kill-server"); !strings.Contains(out, "stopped the ptyhub server") {
		t.Errorf("kill-server: %s", out)
	}
	if _, errs, code := h.run("kill-server"); code == 0 || !strings.Contains(errs, "no ptyhub server is running") {
		t.Errorf("kill-server without a server: status %d, stderr %q", code, errs)
	}
}
