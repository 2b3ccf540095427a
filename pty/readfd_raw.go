//go:build linux && !race

package pty

import (
	"syscall"
	"unsafe"
)

// readFd is read(2) of a non-blocking master (newMasterReader), made as a raw system call: the
// goroutine keeps its P across it, as across any short call, instead of telling the
// scheduler it may block (entersyscall). A read of a non-blocking master
// returns at once (it may wait a few microseconds for the kernel's flush of the
// terminal's buffer into its line discipline). In a flood the reader reads all the
// time: each read told to the scheduler made the runtime's monitor retake the reader's P
// whenever another goroutine ran (a P handed to another thread, woken by futex, and
// taken back at the read's return) and kept the monitor waking every 20 µs. A build with
// the race detector reads through unix.Read instead, which tells the detector that the
// kernel wrote p (readfd.go).
func readFd(fd int, p []byte) (int, error) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
