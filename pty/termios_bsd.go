//go:build darwin || freebsd

package pty

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TIOCGETA

const ioctlSetTermios = unix.TIOCSETA
