//go:build !linux

package remote

import "syscall"

// setPdeathsig does nothing where the kernel has no parent-death signal: the transport
// program ends when its stdin closes, which happens when this process dies.
func setPdeathsig(*syscall.SysProcAttr) {}
