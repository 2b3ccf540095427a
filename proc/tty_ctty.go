//go:build freebsd || (linux && ptyhub_portable)

package proc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func terminalPath(fd int) (string, error) {
	sid, err := unix.IoctlGetInt(fd, unix.TIOCGSID)
	if err != nil {
		return "", err
	}
	own, err := unix.Getsid(0)
	if err != nil {
		return "", err
	}
	if sid != own {
		return "", fmt.Errorf("fd %d is not this process's controlling terminal", fd)
	}
	return "/dev/tty", nil
}
