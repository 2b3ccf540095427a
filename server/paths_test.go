package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// TestPrepareDir: the socket directory is created 0700, and a directory that another user
// planted, a symlink, a file, or (for default paths) a directory others can enter is
// refused.
func TestPrepareDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, f func(p string) error) string {
		p := filepath.Join(base, name)
		if err := f(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ours := mk("ours", func(p string) error { return os.Mkdir(p, 0o700) })
	cases := []struct {
		name    string
		dir     string
		strict  bool
		wantErr string
	}{
		{"created", filepath.Join(base, "new"), true, ""},
		{"ours 0700", ours, true, ""},
		{"symlink", mk("link", func(p string) error { return os.Symlink(ours, p) }), true, "symbolic link"},
		{"file", mk("file", func(p string) error { return os.WriteFile(p, nil, 0o600) }), true, "not a directory"},
		{"loose mode", mk("loose", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.Chmod(p, 0o755)
		}), true, "must be 0700"},
		{"loose mode, explicit path", filepath.Join(base, "loose"), false, ""},
	}
	if os.Getuid() == 0 { // as root, plant a directory owned by nobody
		cases = append(cases, struct {
			name    string
			dir     string
			strict  bool
			wantErr string
		}{"other user's", mk("theirs", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.Chown(p, 65534, 65534)
		}), true, "owned by uid 65534"})
	}
	for _, c := range cases {
		err := prepareDir(c.dir, c.strict)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.wantErr)
		}
	}
	if fi, err := os.Stat(filepath.Join(base, "new")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("created directory: %v %v", fi.Mode(), err)
	}
}

// TestSocketPathFallback: $XDG_RUNTIME_DIR is used only when it is ours and short enough
// for a socket path (108 bytes); otherwise the per-user directory in /tmp.
func TestSocketPathFallback(t *testing.T) {
	t.Setenv("PTYHUB_SOCKET", "")
	fallback := filepath.Join(os.TempDir(), "ptyhub-"+strconv.Itoa(os.Getuid()), "server.sock")
	short := t.TempDir()
	long := filepath.Join(t.TempDir(), strings.Repeat("x", 200))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, runtimeDir, want string }{
		{"short", short, filepath.Join(short, "ptyhub", "server.sock")},
		{"200 characters", long, fallback},
		{"missing", filepath.Join(short, "nope"), fallback},
		{"relative", "run/user", fallback},
		{"unset", "", fallback},
	}
	if os.Getuid() == 0 {
		theirs := filepath.Join(t.TempDir(), "theirs")
		if err := os.Mkdir(theirs, 0o700); err != nil || os.Chown(theirs, 65534, 65534) != nil {
			t.Fatal("cannot plant another user's directory")
		}
		cases = append(cases, struct{ name, runtimeDir, want string }{"another user's (after su)", theirs, fallback})
	}
	for _, c := range cases {
		t.Setenv("XDG_RUNTIME_DIR", c.runtimeDir)
		if got := SocketPath(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestConcurrentListen: servers started at the same moment on one socket: exactly one
// gets it, the others are told one is running.
func TestConcurrentListen(t *testing.T) {
	mgr, err := session.NewManager(session.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close(context.Background())
	sock := filepath.Join(t.TempDir(), "s.sock")
	const n = 8
	errs := make(chan error, n)
	srvs := make(chan *Server, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			srv, err := Listen(mgr, Options{Socket: sock})
			errs <- err
			if err == nil {
				srvs <- srv
			}
		})
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrRunning):
			t.Errorf("a losing Listen: %v, want ErrRunning", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d servers got the socket, want exactly 1", won)
	}
	// The winner serves; stop it.
	srv := <-srvs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	cancel()
	<-done
}

// One state directory for everything: the server's log and the manager's transcripts
// agree, also without $HOME (before: transcripts failed there while the server fell back
// to $TMPDIR/ptyhub-UID/state).
func TestOneStateDir(t *testing.T) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	uid := strconv.Itoa(os.Getuid())
	for _, tt := range []struct {
		name, xdg, home, want string
	}{
		{"xdg", filepath.Join(tmp, "xdg"), home, filepath.Join(tmp, "xdg", "ptyhub")},
		{"home", "", home, filepath.Join(home, ".local", "state", "ptyhub")},
		{"relative xdg", "rel", home, filepath.Join(home, ".local", "state", "ptyhub")},
		{"no home", "", "", filepath.Join(tmp, "ptyhub-"+uid, "state")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			t.Setenv("TMPDIR", tmp)
			if got := StateDir(); got != tt.want {
				t.Errorf("server.StateDir() = %q, want %q", got, tt.want)
			}
			m, err := session.NewManager(session.Options{})
			if err != nil {
				t.Fatal(err)
			}
			y := int64(20_000)
			r, err := m.NewClient("t").Exec(context.Background(), session.ExecRequest{Cmd: "echo recorded", YieldTimeMs: &y})
			m.Close(context.Background()) // waits for the transcript writer
			if err != nil {
				t.Fatal(err)
			}
			cast := filepath.Join(tt.want, "sessions", r.UUID+".cast")
			if _, err := os.Stat(cast); err != nil {
				t.Errorf("the transcript is not in the state directory: %v", err)
			}
		})
	}
}
