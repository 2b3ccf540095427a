package proc

import (
	"os"
	"strconv"
)

// Executable returns a path that opens the binary this process runs, for starting it
// again or reading its build: on Linux the kernel's link to it (/proc/self/exe), which
// still opens that very file after it was deleted or replaced under its name (go run, go
// install of a new build); elsewhere the path it was started by (os.Executable), which
// then names what is there now.
func Executable() string { return executable() }

// ExecutableReplaced reports whether the binary this process runs is gone from the file
// system (deleted, or replaced by another file under its name), so that no new process
// can start it. False where the OS cannot tell (darwin, FreeBSD).
func ExecutableReplaced() bool { return executableReplaced() }

// OpenFDs lists this process's open file descriptors (/proc/self/fd on Linux, /dev/fd
// elsewhere), including, while it reads, the one it reads them through; nil when they
// cannot be listed.
func OpenFDs() []int { return openFDs() }

// fdsIn lists the numeric names in dir, a directory of descriptors.
func fdsIn(dir string) []int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	fds := make([]int, 0, len(ents))
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds
}
