//go:build linux && amd64 && !ptyhub_portable

package proc

import "golang.org/x/sys/unix"

// The older waiting syscalls that only some architectures have.
const (
	sysSelect    = unix.SYS_SELECT
	sysPoll      = unix.SYS_POLL
	sysEpollWait = unix.SYS_EPOLL_WAIT
)
