package server

import (
	"errors"
	"fmt"
	"os"
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
// when missing (never chmod-ed afterwards), then lstat-checked: a real directory (not a
// symlink), owned by this user, and, when strict, with no group or other permissions.
// A directory given explicitly (PTYHUB_SOCKET, --socket) is not strict: it must be ours,
// but its mode is the user's choice (the socket itself is 0600 and peers are checked).
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
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("server: socket directory: %w", err)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("server: socket directory %s is a symbolic link; refusing to use it", dir)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("server: socket directory %s is not a directory", dir)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("server: socket directory %s belongs to uid %d, not to you (uid %d); refusing to use it", dir, st.Uid, os.Getuid())
	case strict && st.Mode&0o077 != 0:
		return fmt.Errorf("server: socket directory %s has mode %#o; it must be 0700 (remove it and retry)", dir, st.Mode&0o777)
	}
	return nil
}

// errNoServer reports a connect error meaning no server is listening.
func errNoServer(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}
