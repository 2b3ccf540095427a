package server

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid and pid of the process at the other end of the Unix socket fd
// (SO_PEERCRED).
func peerCred(fd int) (uid, pid int, err error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, 0, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	return int(cred.Uid), int(cred.Pid), nil
}
