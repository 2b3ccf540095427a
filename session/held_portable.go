//go:build (linux && ptyhub_portable) || darwin || freebsd

package session

import (
	"syscall"

	"github.com/ptyhub/ptyhub/reaper"
)

// awaitHeld is never called on the portable paths: the reaper does not hold leaders there
// (reaper.CanReadExitStatus is false), so every exit status comes from the reaper's wait4.
func (s *Session) awaitHeld(<-chan reaper.Exit) (syscall.WaitStatus, bool, *reaper.Exit) {
	return 0, false, nil
}

// wakeHeld is never called on the portable paths (no leader is held there).
func (s *Session) wakeHeld() {}
