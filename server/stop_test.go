package server

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// listenerProc starts a process that listens on a Unix socket in a fresh directory (a
// stand-in server: kill-server needs only its pid, start and socket) and keeps every
// connection open until it exits. It returns the socket and the process.
func listenerProc(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	const prog = `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(8)
sys.stdout.write("ready\n"); sys.stdout.flush()
conns = []
while True:
    conns.append(s.accept()[0])
`
	cmd := exec.Command(testtool.Python(t), "-c", prog, sock)
	_, out := testtool.StartPiped(t, cmd)
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the listener did not start: %q, %v", line, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return sock, cmd
}

// kill-server stops the process listening on the socket with SIGTERM and waits for its
// exit, naming its pid.
func TestKillServerStopsTheListener(t *testing.T) {
	t.Parallel()
	sock, cmd := listenerProc(t)
	pid, err := KillServer(t.Context(), sock)
	if err != nil {
		t.Fatal(err)
	}
	if pid != cmd.Process.Pid {
		t.Errorf("KillServer named pid %d, want %d", pid, cmd.Process.Pid)
	}
	cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("the server ended with %v, want SIGTERM", cmd.ProcessState)
	}
}

// The server's start is read while the connection to it is open; once the server has
// exited (its end of the connection closed), its pid may be another process's, so the
// Ref is refused rather than read from whatever has the pid now, and nothing is signalled.
func TestPeerRefRefusesAServerThatExited(t *testing.T) {
	t.Parallel()
	sock, cmd := listenerProc(t)
	c, err := dialOnce(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := peerRef(c)
	if err != nil || r.PID != cmd.Process.Pid || r.Start == 0 {
		t.Fatalf("peerRef of a live server = %+v, %v; want pid %d with its start", r, err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if r, err := peerRef(c); !errors.Is(err, errPeerClosed) {
		t.Fatalf("peerRef after the server exited = %+v, %v; want errPeerClosed", r, err)
	}
	if err := stopServer(context.Background(), r); err != nil {
		t.Fatalf("stopServer of a server that exited = %v, want nil (nothing to stop)", err)
	}
}
