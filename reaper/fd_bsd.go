//go:build darwin || freebsd

package reaper

import "os"

// fdDir lists this process's open descriptors.
const fdDir = "/dev/fd"

// selfExe names the running binary. There is no /proc/self/exe here: a binary deleted or
// replaced since this process started cannot start its reaper.
func selfExe() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}
