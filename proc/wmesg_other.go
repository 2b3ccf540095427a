//go:build !freebsd

package proc

// ThreadWaits reports the wait of every thread of process pid where the OS keeps a wait
// message per thread (FreeBSD). Here it does not: ok is false and fn is never called.
// (Linux has the exact view through /proc/PID/task/TID/syscall instead.)
func ThreadWaits(pid int, fn func(WaitKind)) (ok bool) { return false }
