package ptyhub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// dkDaemon is a Docker daemon of one test's own: its data, state and socket in the
// test's directory, no iptables, no bridge, the vfs storage driver (no overlay mounts).
type dkDaemon struct {
	docker string   // the docker client
	env    []string // DOCKER_HOST for the client
}

// dkStart starts dockerd and waits until it answers; it is stopped (by its pid) and its
// files removed at cleanup. A daemon that cannot start skips the test, or fails it when
// CI=true.
func dkStart(t *testing.T) *dkDaemon {
	t.Helper()
	dockerd := testtool.Path(t, "dockerd")
	docker := testtool.Path(t, "docker")
	dir, err := os.MkdirTemp("", "ptyhub-dk")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "docker.sock")
	cmd := osexec.Command(dockerd, "--iptables=false", "--bridge=none", "--storage-driver=vfs",
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"), "-H", "unix://"+sock)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		testtool.Missing(t, "dockerd does not start: "+err.Error())
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // owned by the cleanup below
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		os.RemoveAll(dir)
	})
	d := &dkDaemon{docker: docker, env: []string{"DOCKER_HOST=unix://" + sock}}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := d.run("version", "--format", "{{.Server.Version}}"); err == nil {
			return d
		}
		select {
		case <-exited:
			testtool.Missing(t, "dockerd exited at start:\n"+log.String())
		default:
		}
		if time.Now().After(deadline) {
			testtool.Missing(t, "dockerd did not answer within 2 minutes:\n"+log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// run runs the docker client against the daemon.
func (d *dkDaemon) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, d.docker, args...)
	cmd.Env = append(os.Environ(), d.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %q: %v: %s", args, err, out)
	}
	return string(out), nil
}

// dkImage imports an image (no registry) holding busybox-static with its applet links
// and a static ptyhub, and returns its name.
func dkImage(t *testing.T, d *dkDaemon) string {
	t.Helper()
	busybox := testtool.Path(t, "busybox") // busybox-static on Debian
	root := filepath.Join(t.TempDir(), "root")
	for _, sub := range []string{"bin", "tmp", "root"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(root, "tmp"), 0o1777)
	b, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	list, err := osexec.Command(busybox, "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			os.Symlink("busybox", filepath.Join(root, "bin", applet))
		}
	}
	build := testtool.GoBuild(filepath.Join(root, "bin", "ptyhub"), "./cmd/ptyhub")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build of ptyhub: %v\n%s", err, out)
	}
	tar := filepath.Join(t.TempDir(), "image.tar")
	if out, err := osexec.Command("tar", "-C", root, "-cf", tar, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	name := "ptyhub-test:latest"
	if _, err := d.run("import", tar, name); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestDockerReal: docker:// against a real Docker daemon. The CLI runs, types into,
// lists, attaches to (through a real pty) and kills sessions in a container; an agent
// does the same over MCP, and after a `docker restart` of the container mid-session the
// next call says what happened and the one after works.
func TestDockerReal(t *testing.T) {
	t.Parallel()
	d := dkStart(t)
	image := dkImage(t, d)
	const container = "ptyhub-test-box"
	if _, err := d.run("run", "-d", "--name", container, "--network", "none", image, "/bin/sleep", "1000000"); err != nil {
		t.Fatal(err)
	}
	url := "docker://" + container
	h := svNew(t)
	h = h.inDir(h.dir, d.env...)

	if out := h.ok("--host", url, "exec", "-c", "echo in-$((40+2)) $(cat /etc/hostname)"); !strings.Contains(out, "in-42") {
		t.Errorf("exec in the container printed:\n%s", out)
	}
	if h.serverPID() != 0 {
		t.Error("a local server was started for a command in the container")
	}
	var sh struct {
		SessionID string `json:"session_id"`
	}
	out := h.ok("--host", url, "exec", "--json", "--env", "PS1=$ ", "--wait-for", `\$ $`, "--", "sh")
	if err := json.Unmarshal([]byte(out), &sh); err != nil || sh.SessionID == "" {
		t.Fatalf("exec sh: %v %s", err, out)
	}
	if out := h.ok("--host", url, "write", sh.SessionID, "echo typed-$((6*7))\n", "--wait-for", "typed-42"); !strings.Contains(out, "typed-42") {
		t.Errorf("write in the container:\n%s", out)
	}
	if out := h.ok("--host", url, "ls"); !strings.Contains(out, " sh ") && !strings.Contains(out, "  sh") {
		t.Errorf("ls of the container does not list sh:\n%s", out)
	}
	tm := h.attach(24, 80, true, "--host", url, sh.SessionID)
	off := tm.waitFor(0, svRepainted)
	tm.typ("echo att-$((1+1))\r")
	tm.waitFor(off, "att-2")
	tm.typ("\x1d")
	if code := tm.wait(); code != 0 {
		t.Errorf("attach exited %d", code)
	}
	tm.sane()
	if out := h.ok("--host", url, "kill", sh.SessionID); !strings.Contains(out, "Session "+sh.SessionID+" ended") {
		t.Errorf("kill in the container: %s", out)
	}

	got := runSteps(t, h, []string{"mcp"}, []map[string]any{
		tool("echo", "exec_command", map[string]any{"host": url, "cmd": "echo mcp-$((2*21))"}),
		tool("sh", "exec_command", map[string]any{"host": url, "argv": []string{"sh"}, "env": map[string]string{"PS1": "$ "}, "wait_for": `\$ $`}),
		tool("write", "write_stdin", map[string]any{"session_id": "$sh", "chars": "echo w-$((3*3))\n", "wait_for": "w-9"}),
		tool("list", "list_sessions", map[string]any{}),
		tool("kill", "kill_session", map[string]any{"session_id": "$sh"}),
		tool("sh2", "exec_command", map[string]any{"host": url, "argv": []string{"sh"}, "yield_time_ms": 0}),
		{"step": "restart", "run": []string{d.docker, "restart", "-t", "1", container}},
		tool("after", "write_stdin", map[string]any{"session_id": "$sh2", "chars": "echo hi\n"}),
		tool("again", "exec_command", map[string]any{"host": url, "cmd": "echo back-$((5+5))"}),
	})
	if o := got["echo"].field("output"); !strings.Contains(o, "mcp-42") {
		t.Errorf("exec_command in the container: %+v", got["echo"])
	}
	if o := got["write"].field("output"); !strings.Contains(o, "w-9") {
		t.Errorf("write_stdin in the container: %+v", got["write"])
	}
	if l := got["list"]; !strings.Contains(l.Text, url+":"+strings.TrimPrefix(got["sh"].field("session_id"), url+":")) {
		t.Errorf("list_sessions does not list %s: %s", got["sh"].field("session_id"), l.Text)
	}
	if k := got["kill"]; k.IsError || !strings.Contains(k.Text, "ended") {
		t.Errorf("kill_session in the container: %+v", k)
	}
	if a := got["after"]; !a.IsError || !strings.Contains(a.Text, url) || !strings.Contains(a.Text, "restarted") {
		t.Errorf("the call after the restart does not say what happened: %+v", a)
	}
	if o := got["again"].field("output"); !strings.Contains(o, "back-10") {
		t.Errorf("the call after that does not work: %+v", got["again"])
	}
	t.Logf("after the restart: %s", got["after"].Text)
}
