//go:build linux && !amd64 && !ptyhub_portable

package proc

// The older waiting syscalls do not exist on this architecture (only pselect6, ppoll and
// epoll_pwait do); these values never match a syscall number.
const (
	sysSelect    = -1
	sysPoll      = -2
	sysEpollWait = -3
)
