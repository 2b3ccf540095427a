package server

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid and pid of the process at the other end of the Unix socket fd
// (LOCAL_PEERCRED, LOCAL_PEERPID).
func peerCred(fd int) (uid, pid int, err error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, 0, fmt.Errorf("LOCAL_PEERCRED: %w", err)
	}
	pid, err = unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		return -1, 0, fmt.Errorf("LOCAL_PEERPID: %w", err)
	}
	return int(cred.Uid), pid, nil
}
