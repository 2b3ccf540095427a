//go:build !linux || ptyhub_portable

package pty

// probeDelivery: kqueue may register a tty descriptor and still not deliver its events
// (macOS), so Open checks that a byte written to the slave wakes a reader through the
// poller before it trusts it. Portable Linux builds run the same check.
const probeDelivery = true
