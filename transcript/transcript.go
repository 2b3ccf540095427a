// Package transcript writes and reads session transcripts: asciicast v2 files
// (https://docs.asciinema.org/manual/asciicast/v2/) that `asciinema play` and
// `asciinema cat` accept, one per session, at
// $XDG_STATE_HOME/ptyhub/sessions/<uuid>.cast (else ~/.local/state/ptyhub/sessions).
//
// A file is a JSON header line, then one JSON array per event,
// [seconds_since_start, code, data]:
//
//   - "o": output, the bytes the program printed. A chunk that ends inside a
//     UTF-8 character carries the incomplete tail to the next event, so valid
//     UTF-8 output is never turned into U+FFFD, and the events' data follow one
//     another at consecutive output offsets. Bytes that are not valid UTF-8 at
//     all cannot be held by a JSON string: each is written as the escape
//     \ufffd (a U+FFFD the program printed is written as itself); their exact
//     bytes go to the raw spill, see below.
//   - "i": input typed into the program. Input typed while the terminal had
//     echo off is never written: an "m" marker "[N bytes of hidden input]"
//     stands for it.
//   - "r": a resize, "COLSxROWS".
//   - "m": markers, in brackets: hidden input, output lost because the writer
//     fell behind, the size cap reached, a disk error, and, as the last line
//     of every finished transcript, "[session ended: …]" with the exit code,
//     signal or time-out.
//
// Reading output back: a writer opened with Options.Spill can read the output it
// recorded back exactly, at its absolute offsets (Writer.ReadAt), so that offsets that
// have left a session's in-memory ring stay readable. It keeps a sparse index of its
// output events in memory (one entry per 64 KiB of output and one after each loss,
// 16 bytes each) and decodes the .cast from the indexed event at or before the offset
// asked. The bytes the .cast cannot hold exactly go to the raw spill <uuid>.raw beside
// it: a sparse file with, at their offsets, the ranges of output that hold bytes that
// are not valid UTF-8 (with the valid bytes between two of them less than 4 KiB apart,
// so binary output makes one range, however it was cut; the writer remembers each
// range). Output that is all valid UTF-8 is written once,
// into the .cast, and creates no spill. ReadAt serves what is in the files (not what
// waits in the writer's buffer: Settled says how far that is), until Release, which
// deletes the spill; Prune deletes spills that no live writer holds. A .cast that
// Prune deleted, or that was edited, can no longer be read back.
//
// Files are 0600 in a 0700 directory that must be a real directory owned by
// the current user. A live writer holds an exclusive flock(2) on its files;
// List reports it as Live and Prune never deletes it.
package transcript

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Default limits.
const (
	// DefaultCap is the default size cap of one transcript.
	DefaultCap = 256 << 20
	// DefaultKeepBytes is the default total size of transcripts kept by Prune.
	DefaultKeepBytes = 1 << 30
)

// Ext is the extension of transcript files; SpillExt that of raw spills.
const (
	Ext      = ".cast"
	SpillExt = ".raw"
	LogExt   = ".log"
)

// EndPrefix starts the data of the "m" event that ends every finished
// transcript, e.g. "[session ended: exited with code 0]".
const EndPrefix = "[session ended: "

// StateDir returns ptyhub's state directory, the one place every part of ptyhub (the
// server's log, transcripts, the session registry) resolves it: $XDG_STATE_HOME/ptyhub
// when that is an absolute path, else ~/.local/state/ptyhub, else (no home directory)
// $TMPDIR/ptyhub-$UID/state. It does not create it. The error is always nil; it stays in
// the signature for callers that handle one.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ptyhub"), nil
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "ptyhub"), nil
	}
	return filepath.Join(os.TempDir(), "ptyhub-"+strconv.Itoa(os.Getuid()), "state"), nil
}

// SessionsDir returns the directory of transcripts under stateDir (the
// default StateDir when stateDir is ""): stateDir/sessions. It does not
// create it.
func SessionsDir(stateDir string) (string, error) {
	if stateDir == "" {
		d, err := StateDir()
		if err != nil {
			return "", err
		}
		stateDir = d
	}
	return filepath.Join(stateDir, "sessions"), nil
}

// Path returns the transcript file of session uuid in dir (a SessionsDir).
func Path(dir, uuid string) string { return filepath.Join(dir, uuid+Ext) }

// LogPath returns the path of the plain-text log of session uuid's output in dir (its
// text view, written by the session beside the transcript; pruned with it).
func LogPath(dir, uuid string) string { return filepath.Join(dir, uuid+LogExt) }

// SpillPath returns the raw spill file of session uuid in dir.
func SpillPath(dir, uuid string) string { return filepath.Join(dir, uuid+SpillExt) }

// EnsureDir creates dir (and missing parents) with mode 0700 and checks it:
// it must be a directory, not a symlink, owned by the current user. A dir
// that others may read or write is narrowed to 0700.
//
// A dir that exists costs one lstat(2) (each session's start checks its directory
// again); a missing one is made, then looked at.
func EnsureDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("transcript: mkdir: %w", err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("transcript: %s is not a directory (a symlink or a file); refusing to write transcripts there", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != selfUID() {
		return fmt.Errorf("transcript: %s is owned by uid %d, not by us (uid %d); refusing to write transcripts there", dir, st.Uid, selfUID())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("transcript: chmod: %w", err)
		}
	}
	return nil
}

// selfUID is this process's user id, asked of the kernel once (getuid(2) is a system
// call each time; ptyhub never changes its user). Not a sync.OnceValue: a package-level
// one is made while the package initialises, which every command of the binary pays.
func selfUID() int {
	uidOnce.Do(func() { uid = os.Getuid() })
	return uid
}

var (
	uidOnce sync.Once
	uid     int
)

// validUUID reports whether id can name a file: no separators, no dot files.
func validUUID(id string) bool {
	return id != "" && !strings.ContainsAny(id, "/\x00") && !strings.HasPrefix(id, ".")
}

// openExclusive creates a new file 0600 (never following a symlink, never
// reusing an existing file) and takes an exclusive flock on it. Four system calls
// (open, fchmod, flock, and the F_GETFL of os.NewFile): through os.OpenFile the runtime
// also tried the regular file on its poller, which refuses it, and put its blocking mode
// back, four more.
func openExclusive(path string, flag int) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, flag|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := syscall.Fchmod(fd, 0o600); err != nil { // whatever the umask was
		syscall.Close(fd)
		return nil, &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("flock: %w", err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = syscall.Flock(int(fd), how) }); err != nil {
		return err
	}
	if ferr != nil {
		return fmt.Errorf("flock: %w", ferr)
	}
	return nil
}

// locked reports whether a live writer holds path (its flock is taken).
func locked(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return Held(f)
}

// Held reports whether another open file holds an exclusive flock on f's file (a live
// writer of a transcript, a live manager's registry log): it tries a shared lock without
// waiting and, when it gets one, lets it go at once. f must be a file of the caller's own
// opening, holding no lock.
func Held(f *os.File) bool {
	err := flock(f, syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		flock(f, syscall.LOCK_UN)
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// Hold takes an exclusive flock on f, kept until f is closed (or its process dies): the
// sign Held sees. It waits while another holds a lock on the file (a Held probe's shared
// one lasts a moment).
func Hold(f *os.File) error {
	for {
		if err := flock(f, syscall.LOCK_EX); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
