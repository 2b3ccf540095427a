//go:build darwin || freebsd

package proc

import "os"

// There is no link to the running binary here: a binary deleted or replaced since this
// process started cannot be started again, and that cannot be told.

func executable() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}

func executableReplaced() bool { return false }

func openFDs() []int { return fdsIn("/dev/fd") }
