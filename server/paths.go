package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/transcript"
)

// maxSunPath is the longest socket path bind accepts (sun_path is 108 bytes with a NUL).
const maxSunPath = 107

// SocketPath returns the server socket of this user: $PTYHUB_SOCKET, else
// $XDG_RUNTIME_DIR/ptyhub/server.sock when that directory is this user's and the path is
// short enough for a socket, else /tmp/ptyhub-$UID/server.sock. It creates nothing.
func SocketPath() string {
	if p := os.Getenv("PTYHUB_SOCKET"); p != "" {
		return p
	}
	return defaultSocketPath()
}

// defaultSocketPath is SocketPath without PTYHUB_SOCKET.
func defaultSocketPath() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		p := filepath.Join(d, "ptyhub", "server.sock")
		var st unix.Stat_t
		if len(p) <= maxSunPath && unix.Stat(d, &st) == nil && int(st.Uid) == os.Getuid() {
			return p
		}
	}
	return filepath.Join(os.TempDir(), "ptyhub-"+strconv.Itoa(os.Getuid()), "server.sock")
}

// StateDir returns ptyhub's state directory, where the server's log goes: the one
// resolver, transcript.StateDir.
func StateDir() string {
	d, _ := transcript.StateDir()
	return d
}

// prepareDir makes sure dir exists and is safe for the socket: created with mode 0700
// when missing (never chmod-ed afterwards), then checked by checkDir. A directory given
// explicitly (PTYHUB_SOCKET, --socket) is not strict: it must be ours, but its mode is the
// user's choice (the socket itself is 0600 and peers are checked).
func prepareDir(dir string, strict bool) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		if !strict && errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("server: create socket directory: %w", err)
			}
		} else {
			return fmt.Errorf("server: create socket directory: %w", err)
		}
	}
	return checkDir(dir, strict)
}

// checkDir checks, with lstat, that the socket directory dir is safe to use: a real
// directory (not a symbolic link), owned by this user, and, when strict (the default
// socket path, in a directory anyone may create), with no group or other permissions.
// The server checks it before listening, and every client before connecting, so no one
// talks to a socket another user could have put there. A missing dir is returned as is
// (an error wrapping ENOENT: no server, one may be started); every other failure is a
// *RefusedError.
func checkDir(dir string, strict bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("socket directory %s: %w", dir, err)
		}
		return &RefusedError{Path: dir, Why: err.Error()}
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return &RefusedError{Path: dir, Why: "it is a symbolic link (the socket directory must be a real directory of yours)", Remove: true}
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return &RefusedError{Path: dir, Why: "it is not a directory", Remove: true}
	case int(st.Uid) != os.Getuid():
		return &RefusedError{Path: dir, Why: fmt.Sprintf("owned by %s, not you (uid %d)", describeUID(int(st.Uid)), os.Getuid()), Remove: true}
	case strict && st.Mode&0o077 != 0:
		return &RefusedError{Path: dir, Why: fmt.Sprintf("it has mode %#o; it must be 0700", st.Mode&0o777), Remove: true}
	}
	return nil
}

// RefusedError says why a socket (or its directory) was not used: it is, or could be,
// another user's. Nothing was sent to it, and no server is started over it.
type RefusedError struct {
	Path   string // the socket or its directory
	Why    string
	Remove bool // removing Path (a directory the user can remove) fixes it
}

func (e *RefusedError) Error() string {
	fix := "set PTYHUB_SOCKET to a socket in a directory of yours"
	if e.Remove {
		fix = "remove it or set PTYHUB_SOCKET"
	}
	return fmt.Sprintf("refusing %s: %s; %s", e.Path, e.Why, fix)
}

// describeUID names a uid for an error message: "uid 1001 (alice)", or "uid 1001".
func describeUID(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return fmt.Sprintf("uid %d", uid)
}

// checkPeer checks that the process listening at the other end of c (which connected to
// path) runs as this user, before anything is sent to it: a socket in a directory others
// can write to may be anyone's. It returns the peer's pid, or a *RefusedError.
func checkPeer(c *net.UnixConn, path string) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var uid, pid int
	var cerr error
	if err := raw.Control(func(fd uintptr) { uid, pid, cerr = peerCred(int(fd)) }); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, &RefusedError{Path: path, Why: "the peer's uid cannot be read: " + cerr.Error()}
	}
	if uid != os.Getuid() {
		return 0, &RefusedError{Path: path, Why: fmt.Sprintf("the process listening on it runs as %s, not as you (uid %d)", describeUID(uid), os.Getuid())}
	}
	return pid, nil
}

// errNoServer reports a connect error meaning no server is listening.
func errNoServer(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}
