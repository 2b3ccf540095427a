//go:build linux && !ptyhub_portable

package pty

// probeDelivery: epoll accepts every tty descriptor and delivers its events; accepting a
// deadline is proof enough that the master is registered.
const probeDelivery = false
