//go:build (linux && ptyhub_portable) || darwin || freebsd

package session

import "github.com/ptyhub/ptyhub/reaper"

// watchHeld is never called on the portable paths: the reaper does not hold leaders there
// (reaper.CanReadExitStatus is false), so every exit status comes from the reaper's
// wait4. Were it called, the exit path would ask the reaper (Release).
func (s *Session) watchHeld() { s.tellEnd(endAsk, reaper.Exit{}) }

// unwatchHeld does nothing: no leader is held on the portable paths.
func (s *Session) unwatchHeld() {}
