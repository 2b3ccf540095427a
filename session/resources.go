package session

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/ptyhub/ptyhub/proc"
)

// Resource limits of the manager's own process. A session costs the manager three file
// descriptors while it runs (terminal master, exit watch, transcript; a fourth for the
// spill once its output passes half the ring; and, for probeFilesKept after a call that
// found its program at a prompt, the detector's /proc files of it and a pidfd, at most
// proc.KeptMax) and none once it has ended. The manager keeps fdReserve descriptors free
// for everything else it does (the server accepting and answering its clients, reading
// transcripts), so running out refuses new sessions cleanly instead of breaking what
// runs.
const (
	// fdsPerSession is the most a session holds while it starts.
	fdsPerSession = 6
	// fdsPerLive is the most a running session holds.
	fdsPerLive = 4 + proc.KeptMax
	// fdReserve is kept free for the server's clients and the manager's own files.
	fdReserve = 48
)

// ResourceError says a session could not start because a limit of the system or of the
// manager's process was reached. It wraps ErrLimit; its message names the limit and what
// to do.
type ResourceError struct {
	// Limit names the limit: "RLIMIT_NOFILE", "RLIMIT_NPROC", "pty", "memory".
	Limit string
	msg   string
}

func (e *ResourceError) Error() string { return e.msg }
func (e *ResourceError) Unwrap() error { return ErrLimit }

// checkFDs returns a ResourceError when starting one more session would eat into the
// reserve. It counts the open descriptors only when the live sessions could come close
// to the limit (each holding the most a running session can), so with a high limit it
// costs nothing.
func (m *Manager) checkFDs(live int) error {
	limit, ok := fdLimit()
	if !ok {
		return nil
	}
	if !mayNearFDLimit(live, limit) {
		return nil
	}
	open, ok := openFDs()
	if !ok {
		return nil
	}
	if uint64(open+fdsPerSession+fdReserve) <= limit {
		return nil
	}
	return &ResourceError{Limit: "RLIMIT_NOFILE", msg: fmt.Sprintf(
		"cannot start a session: the ptyhub server has %d of its %d file descriptors open (RLIMIT_NOFILE; %d running sessions, %d kept for its clients). "+
			"End sessions you no longer need, or restart the server with a higher limit (ulimit -n)",
		open, limit, live, fdReserve)}
}

// mayNearFDLimit reports whether live running sessions and one more starting could hold
// half of limit descriptors with the reserve and the server's own (256): only then are
// the open descriptors worth counting.
func mayNearFDLimit(live int, limit uint64) bool {
	return uint64(live)*fdsPerLive+fdsPerSession+fdReserve+256 >= limit/2
}

// resourceError turns an error of starting a session that comes from a limit (too many
// open files, no pty left, no process slot, no memory) into a ResourceError naming it;
// other errors are returned unchanged.
func resourceError(err error, live int) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err
	}
	limit, what := "", ""
	switch errno {
	case syscall.EMFILE:
		limit, what = "RLIMIT_NOFILE", "the ptyhub server ran out of file descriptors (RLIMIT_NOFILE). End sessions you no longer need, or restart the server with a higher limit (ulimit -n)"
	case syscall.ENFILE:
		limit, what = "file-max", "the system ran out of open files (fs.file-max). End sessions you no longer need"
	case syscall.ENOSPC:
		limit, what = "pty", "no pseudo-terminal is left (kernel.pty.max). End sessions you no longer need, or raise kernel.pty.max"
	case syscall.EAGAIN:
		limit, what = "RLIMIT_NPROC", "no process can be created: the user's process limit (RLIMIT_NPROC, ulimit -u) or the system's (kernel.pid_max, cgroup pids.max) is reached. End sessions or programs you no longer need, or raise the limit"
	case syscall.ENOMEM:
		limit, what = "memory", "the system is out of memory. End sessions you no longer need"
	default:
		return err
	}
	return &ResourceError{Limit: limit, msg: fmt.Sprintf("cannot start a session (%v; %d running): %s", err, live, what)}
}

// Stats describe the manager's load and its process's resources, for a user to see
// trouble coming.
type Stats struct {
	// Running and Exited count the sessions in the table by state (exited ones are
	// history, see Options.KeepExited).
	Running int `json:"running"`
	Exited  int `json:"exited"`
	// Pools counts the clients (and the shared CLI pool) that have sessions.
	Pools int `json:"pools"`
	// MaxSessions is the limit of running sessions of one pool.
	MaxSessions int `json:"max_sessions"`
	// FDs is the number of open file descriptors of the process, FDLimit its soft
	// RLIMIT_NOFILE (0: unknown or unlimited).
	FDs     int    `json:"fds"`
	FDLimit uint64 `json:"fd_limit"`
	// RSSBytes is the resident memory of the process (0: unknown on this system).
	RSSBytes int64 `json:"rss_bytes"`
}

// Stats returns the manager's counts and its process's resources. It costs O(sessions).
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	st := Stats{Pools: len(m.pools), MaxSessions: m.opts.MaxSessions}
	for _, s := range m.sessions {
		if s.isExited() {
			st.Exited++
		} else {
			st.Running++
		}
	}
	m.mu.Unlock()
	st.FDs, _ = openFDs()
	st.FDLimit, _ = fdLimit()
	st.RSSBytes = proc.SelfRSS()
	return st
}
