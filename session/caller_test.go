package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// callerExec runs cmd for c to its end and returns its output.
func callerExec(t *testing.T, c *Client, req ExecRequest) string {
	t.Helper()
	y := int64(20_000)
	req.YieldTimeMs = &y
	r, err := c.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Cmd, err)
	}
	if r.State != StateExited {
		t.Fatalf("exec %q: still running after 20 s: %q", req.Cmd, r.Output)
	}
	return r.Output
}

// A client for a caller runs its sessions in the caller's directory (relative workdirs
// against it, symbolic links kept, PWD set) with the caller's environment, not the
// manager's; the zero Caller is the manager's process.
func TestCallerDirAndEnv(t *testing.T) {
	t.Parallel()
	m, err := NewManager(Options{NoRecord: true, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })

	root := t.TempDir()
	proj := filepath.Join(root, "my proj")
	if err := os.MkdirAll(filepath.Join(proj, "sub dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "ONLY_IN_CALLER=yes", "VIRTUAL_ENV=/venv", "PWD=/elsewhere"}
	c, err := m.NewClientFor("t", Caller{Dir: link, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	got := callerExec(t, c, ExecRequest{Cmd: `echo "$PWD|$(pwd -P)|$ONLY_IN_CALLER|$VIRTUAL_ENV|$PATH|${HOME-unset}"`})
	want := link + "|" + proj + "|yes|/venv|/usr/bin:/bin|unset\n"
	if got != want {
		t.Errorf("caller's directory and environment:\n got %q\nwant %q", got, want)
	}
	got = callerExec(t, c, ExecRequest{Cmd: `pwd`, Workdir: "sub dir"})
	if want := filepath.Join(link, "sub dir") + "\n"; got != want {
		t.Errorf("relative workdir: got %q, want %q", got, want)
	}
	got = callerExec(t, c, ExecRequest{Argv: []string{"pwd"}, Workdir: ".."})
	if want := root + "\n"; got != want {
		t.Errorf("workdir ..: got %q, want %q", got, want)
	}
	_, err = c.Exec(context.Background(), ExecRequest{Cmd: "pwd", Workdir: "missing"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), filepath.Join(link, "missing")) {
		t.Errorf("missing relative workdir: %v, want ErrInvalid naming the resolved path", err)
	}

	// An empty environment stays empty (the manager's is not used instead).
	bare, err := m.NewClientFor("bare", Caller{Dir: proj})
	if err != nil {
		t.Fatal(err)
	}
	got = callerExec(t, bare, ExecRequest{Argv: []string{"/usr/bin/env"}, Profile: ProfilePlain})
	vars := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	slices.Sort(vars)
	if len(vars) != 3 || vars[0] != "PTYHUB_SESSION="+strings.TrimPrefix(vars[0], "PTYHUB_SESSION=") ||
		vars[1] != "PWD="+proj || vars[2] != "TERM=xterm-256color" {
		t.Errorf("empty caller environment: the session saw %q, want only PTYHUB_SESSION, PWD and TERM", vars)
	}

	// The zero Caller is this process.
	wd, _ := os.Getwd()
	self := m.NewClient("self")
	if got := callerExec(t, self, ExecRequest{Cmd: `pwd -P`}); got != wd+"\n" {
		t.Errorf("zero caller: pwd %q, want %q", got, wd)
	}
}

func TestCallerCheck(t *testing.T) {
	t.Parallel()
	m, err := NewManager(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Caller{{Dir: "rel"}, {Env: []string{"A=1"}}, {Dir: "/", Env: []string{"NOEQUALS"}}} {
		if _, err := m.NewClientFor("t", c); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewClientFor(%+v): %v, want ErrInvalid", c, err)
		}
	}
	if _, err := m.NewClientFor("t", Caller{}); err != nil {
		t.Errorf("zero caller: %v", err)
	}
}

func TestWithoutSecrets(t *testing.T) {
	t.Parallel()
	env := []string{"PATH=/bin", "OPENAI_API_KEY=k", "GITHUB_TOKEN=t", "aws_secret_access_key=s",
		"PGPASSWORD=p", "AWS_SESSION_TOKEN=x", "HOME=/h", "SSH_AUTH_SOCK=/s"}
	kept, dropped := WithoutSecrets(env, []string{"GITHUB_TOKEN", "AWS_*"})
	if want := []string{"PATH=/bin", "GITHUB_TOKEN=t", "AWS_SESSION_TOKEN=x", "HOME=/h", "SSH_AUTH_SOCK=/s"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if want := []string{"OPENAI_API_KEY", "aws_secret_access_key", "PGPASSWORD"}; !slices.Equal(dropped, want) {
		t.Errorf("dropped %q, want %q", dropped, want)
	}
}

// LogicalWd keeps the name the user reached the directory by ($PWD through a symbolic
// link) and ignores a $PWD that names another directory.
func TestLogicalWd(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real dir")
	os.Mkdir(real, 0o755)
	link := filepath.Join(root, "link")
	os.Symlink(real, link)
	t.Chdir(link)
	t.Setenv("PWD", link)
	if got, err := LogicalWd(); err != nil || got != link {
		t.Errorf("LogicalWd() = %q, %v; want %q", got, err, link)
	}
	t.Setenv("PWD", root)
	if got, err := LogicalWd(); err != nil || got != real {
		t.Errorf("LogicalWd() with a stale PWD = %q, %v; want %q", got, err, real)
	}
}

// The engine's errors and warnings name no interface's commands (no MCP tool, no CLI
// command): each interface adds its own hint.
func TestErrorsNameNoInterface(t *testing.T) {
	t.Parallel()
	m, err := NewManager(Options{NoRecord: true, WarnSessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c := m.NewClient("t")
	y := int64(20_000)
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: "true", YieldTimeMs: &y})
	if err != nil || r.State != StateExited {
		t.Fatalf("exec true: %v %+v", err, r)
	}
	var texts []string
	texts = append(texts, r.Warnings...)
	if len(r.Warnings) == 0 {
		t.Errorf("no warning at WarnSessions 1")
	}
	_, err = c.Write(context.Background(), WriteRequest{SessionID: "999", Chars: "x"})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("write to 999: %v", err)
	}
	texts = append(texts, err.Error())
	_, err = c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "x"})
	if !errors.Is(err, ErrExited) {
		t.Errorf("write to an exited session: %v", err)
	}
	texts = append(texts, err.Error())
	for _, s := range texts {
		for _, word := range []string{"exec_command", "write_stdin", "read_output", "list_sessions", "kill_session", "resize_session", "ptyhub "} {
			if strings.Contains(s, word) {
				t.Errorf("%q names %s", s, word)
			}
		}
	}
}
