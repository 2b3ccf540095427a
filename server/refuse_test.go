//go:build linux

package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// otherUID is the unprivileged user the tests run a foreign listener as (nobody).
const otherUID = 65534

// listenerScript listens on a Unix socket and counts what its clients send. Arguments:
// the socket path (with "{pid}" replaced by its own pid), and the mode of a directory to
// create for it first (octal; "-" for none). It prints "ready" once listening; when its
// stdin ends it takes every connection still waiting, reads what is already there, and
// prints "accepted N bytes M".
const listenerScript = `
import os, select, socket, sys
path = sys.argv[1].replace("{pid}", str(os.getpid()))
if sys.argv[2] != "-":
    os.mkdir(os.path.dirname(path), int(sys.argv[2], 8))
    os.chmod(os.path.dirname(path), int(sys.argv[2], 8))
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(64)
print("ready", flush=True)
conns, accepted, total = [], 0, 0
def take(block):
    global accepted, total
    srv.setblocking(block)
    try:
        c, _ = srv.accept()
    except BlockingIOError:
        return False
    accepted += 1
    c.setblocking(False)
    conns.append(c)
    return True
def drain(c):
    global total
    while True:
        try:
            b = c.recv(65536)
        except BlockingIOError:
            return True
        if not b:
            return False
        total += len(b)
while True:
    r, _, _ = select.select([srv, sys.stdin] + conns, [], [])
    if sys.stdin in r and not sys.stdin.buffer.read1(1):
        break
    if srv in r:
        take(True)
    for c in [c for c in conns if c in r]:
        if not drain(c):
            conns.remove(c)
while take(False):
    pass
for c in conns:
    drain(c)
print("accepted %d bytes %d" % (accepted, total), flush=True)
`

// foreign is a listener run by foreignListener.
type foreign struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	pid   int
}

// foreignListener starts listenerScript on path as uid (-1: as this process's user),
// creating its directory with mode dirMode first unless dirMode is 0, and returns once it
// listens. It is stopped when the test ends.
func foreignListener(t *testing.T, uid int, path string, dirMode os.FileMode) *foreign {
	t.Helper()
	testtool.NeedPython(t)
	mode := "-"
	if dirMode != 0 {
		mode = strconv.FormatUint(uint64(dirMode), 8)
	}
	args := []string{"python3", "-c", listenerScript, path, mode}
	if uid >= 0 {
		testtool.Need(t, "setpriv")
		args = append([]string{"setpriv", "--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(uid), "--clear-groups"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	cmd.Stderr = os.Stderr
	stdin, stdout := testtool.StartPiped(t, cmd)
	f := &foreign{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout), pid: cmd.Process.Pid}
	t.Cleanup(func() { f.stdin.Close(); f.cmd.Process.Kill(); f.cmd.Wait() })
	if line, err := f.out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the listener did not start: %q %v", line, err)
	}
	return f
}

// received stops the listener and returns how many connections it took and how many
// bytes they sent.
func (f *foreign) received(t *testing.T) (conns, bytes int) {
	t.Helper()
	f.stdin.Close()
	line, err := f.out.ReadString('\n')
	if _, serr := fmt.Sscanf(line, "accepted %d bytes %d", &conns, &bytes); err != nil || serr != nil {
		t.Fatalf("listener: %q %v %v", line, err, serr)
	}
	return conns, bytes
}

// needRoot skips t unless it runs as root (to run a listener as another user), or fails
// it when CI=true, where the tests run as root.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		testtool.Missing(t, "needs root to run a listener as another user")
	}
}

// defaultPathIn points the default socket path at base/ptyhub-UID/server.sock (as in
// /tmp, with no PTYHUB_SOCKET or XDG_RUNTIME_DIR) for the rest of the test, and returns
// it. base is made writable by everyone, sticky, as /tmp is.
func defaultPathIn(t *testing.T, base string) string {
	t.Helper()
	if err := os.Chmod(base, 0o1777); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(base); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o711) // t.TempDir's parents, 0700: let nobody through
	}
	t.Setenv("TMPDIR", base)
	t.Setenv("PTYHUB_SOCKET", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	p := SocketPath()
	if want := filepath.Join(base, "ptyhub-"+strconv.Itoa(os.Getuid()), "server.sock"); p != want {
		t.Fatalf("default socket path %s, want %s", p, want)
	}
	return p
}

// autoStartMarker returns an executable that, if a client started it as the server,
// leaves a file saying so, and that file's path.
func autoStartMarker(t *testing.T) (exe, marker string) {
	dir := t.TempDir()
	exe, marker = filepath.Join(dir, "fake-ptyhub"), filepath.Join(dir, "started")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return exe, marker
}

// TestClientRefusesForeignSocket: another user who made the default socket directory
// (/tmp/ptyhub-UID) and listens in it receives nothing from any client: Dial (the CLI,
// ptyhub mcp), dial-stdio and kill-server refuse at once with an error naming the path
// and its owner, and no server is started over it.
func TestClientRefusesForeignSocket(t *testing.T) {
	needRoot(t)
	path := defaultPathIn(t, t.TempDir())
	l := foreignListener(t, otherUID, path, 0o700)
	exe, marker := autoStartMarker(t)
	ctx := context.Background()

	_, err := Dial(ctx, DialOptions{AutoStart: true, Executable: exe, Name: "test"})
	var re *RefusedError
	dir := filepath.Dir(path)
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "refusing "+dir+": owned by uid 65534") || !strings.Contains(err.Error(), "remove it or set PTYHUB_SOCKET") {
		t.Errorf("Dial: %v, want a refusal naming %s and its owner", err, dir)
	}
	hello := &bytes.Buffer{}
	writeFrame(hello, &frame{Op: "hello", Body: []byte(fmt.Sprintf(`{"protocol":%d,"mode":"service","name":"remote"}`, Protocol))})
	var out bytes.Buffer
	if err := ServeStdio(ctx, DialOptions{AutoStart: true, Executable: exe}, hello, &out); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("dial-stdio: %v, want the refusal", err)
	}
	if _, err := KillServer(ctx, ""); !errors.As(err, &re) {
		t.Errorf("KillServer: %v, want a refusal", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a server was started over another user's socket directory")
	}
	if conns, n := l.received(t); conns != 0 || n != 0 {
		t.Errorf("the other user's listener took %d connections and received %d bytes", conns, n)
	}
}

// TestClientChecksPeer: a socket in a directory of ours that others may write to (an
// explicit PTYHUB_SOCKET) is connected to, but nothing is sent unless the listener runs
// as this user; the server, dialling the session hosts next to its socket, checks the
// same.
func TestClientChecksPeer(t *testing.T) {
	needRoot(t)
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o1777)
	os.Chmod(filepath.Dir(dir), 0o711)
	os.Chmod(filepath.Dir(filepath.Dir(dir)), 0o711)
	sock := filepath.Join(dir, "s.sock")
	l := foreignListener(t, otherUID, sock, 0)
	exe, marker := autoStartMarker(t)
	_, err := Dial(context.Background(), DialOptions{Socket: sock, AutoStart: true, Executable: exe})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "refusing "+sock+": the process listening on it runs as uid 65534") {
		t.Errorf("Dial: %v, want a refusal naming the socket and the listener's uid", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a server was started over another user's socket")
	}
	if conns, n := l.received(t); conns != 1 || n != 0 {
		t.Errorf("the other user's listener took %d connections and received %d bytes; want 1 and 0", conns, n)
	}

	// A host socket of another user next to the server's: listed as not answering,
	// sent nothing.
	h := foreignListener(t, otherUID, sock+hostInfix+"{pid}", 0)
	hs := &hostSet{socket: sock}
	defer hs.close()
	members, _ := hs.members(context.Background())
	for _, m := range members {
		if l, err := m.Svc.List(context.Background()); err == nil {
			t.Errorf("the server took another user's host socket as a member: %s listed %v", m.Name, l.Sessions)
		}
	}
	if conns, n := h.received(t); n != 0 {
		t.Errorf("the other user's host listener took %d connections and received %d bytes", conns, n)
	}
}

// TestClientRefusesUnsafeDir: at the default path, a symbolic link to a directory of ours
// and a directory of ours that others may enter are refused before connecting, though a
// server of ours listens there.
func TestClientRefusesUnsafeDir(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(dir string) error
		want string
	}{
		{"symlink", func(dir string) error {
			real := filepath.Join(filepath.Dir(dir), "real")
			if err := os.Mkdir(real, 0o700); err != nil {
				return err
			}
			return os.Symlink(real, dir)
		}, "is a symbolic link"},
		{"mode 0755", func(dir string) error {
			if err := os.Mkdir(dir, 0o700); err != nil {
				return err
			}
			return os.Chmod(dir, 0o755)
		}, "has mode 0755; it must be 0700"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := defaultPathIn(t, t.TempDir())
			if err := c.make(filepath.Dir(path)); err != nil {
				t.Fatal(err)
			}
			l := foreignListener(t, -1, path, 0)
			exe, marker := autoStartMarker(t)
			_, err := Dial(context.Background(), DialOptions{AutoStart: true, Executable: exe})
			var re *RefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "refusing "+filepath.Dir(path)+": ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Dial: %v, want a refusal saying %q", err, c.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("a server was started")
			}
			if conns, n := l.received(t); conns != 0 || n != 0 {
				t.Errorf("the listener took %d connections and received %d bytes", conns, n)
			}
		})
	}
}
