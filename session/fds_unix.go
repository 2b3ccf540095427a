//go:build unix

package session

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdLimit returns the soft RLIMIT_NOFILE of this process (the Go runtime raised it to the
// hard limit at start; processes started for sessions get the original back).
func fdLimit() (uint64, bool) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return 0, false
	}
	return uint64(rl.Cur), true
}

// openFDs counts this process's open file descriptors. Linux (6.2 and later) gives the
// count as the size of /proc/self/fd, one stat(2) however many are open; elsewhere, and
// where that size is 0, /dev/fd is listed (Linux and macOS; the descriptor reading the
// directory is not counted), which with thousands open costs milliseconds.
func openFDs() (int, bool) {
	var st unix.Stat_t
	if unix.Stat("/proc/self/fd", &st) == nil && st.Size > 0 {
		return int(st.Size), true
	}
	return listFDs()
}

// listFDs counts this process's open descriptors by listing /dev/fd.
func listFDs() (int, bool) {
	f, err := os.Open("/dev/fd")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, false
	}
	return len(names) - 1, true
}
