//go:build !linux

package session

// residentBytes is not measured on this system.
func residentBytes() int64 { return 0 }
