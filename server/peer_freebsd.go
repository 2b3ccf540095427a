package server

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid and pid of the process at the other end of the Unix socket fd
// (LOCAL_PEERCRED; struct xucred carries cr_pid since FreeBSD 13).
func peerCred(fd int) (uid, pid int, err error) {
	var cred unix.Xucred
	size := uint32(unsafe.Sizeof(cred))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED,
		uintptr(unsafe.Pointer(&cred)), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return -1, 0, fmt.Errorf("LOCAL_PEERCRED: %w", errno)
	}
	// cr_pid is the union after cr_groups, where x/sys has a pointer-sized blank.
	off := unsafe.Offsetof(cred.Groups) + unsafe.Sizeof(cred.Groups)
	off = (off + unsafe.Alignof(uintptr(0)) - 1) &^ (unsafe.Alignof(uintptr(0)) - 1)
	pid = int(*(*int32)(unsafe.Add(unsafe.Pointer(&cred), off)))
	return int(cred.Uid), pid, nil
}
