//go:build !linux

package session

import "runtime"

// spinPause pauses the looks' spin between two checks: it yields to the goroutines
// queued behind it. (Only Linux's kernel view finds a thread running, the spin's reason
// to go on past waitSpin.)
func spinPause() { runtime.Gosched() }
