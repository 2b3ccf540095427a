//go:build !linux

// Package schedslice sets the time slice that Linux's fair scheduler gives a thread;
// elsewhere its functions do nothing.
package schedslice

import "time"

// Set does nothing outside Linux.
func Set(tid int, d time.Duration) error { return nil }

// SetProcess does nothing outside Linux.
func SetProcess(d time.Duration) error { return nil }
