//go:build darwin || freebsd || (linux && race)

package pty

import "golang.org/x/sys/unix"

// readFd is read(2) of a non-blocking master (newMasterReader); on Linux without the race
// detector it is a raw system call (readfd_raw.go).
func readFd(fd int, p []byte) (int, error) { return unix.Read(fd, p) }
