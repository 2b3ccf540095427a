package session

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/reaper"
)

// The reaper's death. The helper process is the parent (and subreaper) of every
// session's processes; if it dies on its own (SIGKILL, the OOM killer) while the manager
// lives, its sessions' processes are orphaned to init and nothing would ever end them.
// So the manager watches each reaper it starts (watchReaper): when one dies outside
// Close, every session it held ends — its waitExit gets reaper.ErrDead, kills the
// session's processes itself (sweepOrphaned: by PTYHUB_SESSION in their environment, by
// the session ids of those and of the leader (see procSweep.find), and the leader by pid
// if its start time still matches, so a reused pid is never hit) and
// records the exit with that reason — and every client is told once, in its next
// result's warnings. The next session starts a new reaper (startReaper); a spawn that
// still cannot reach one is an error of the call, never an exit code of a program that
// did not run.

// errNoReaper wraps a failure to start the helper process.
var errNoReaper = errors.New("ptyhub's helper process (the reaper) could not be started")

// errReaperDied is the exit reason of a session whose reaper died under it.
var errReaperDied = errors.New("ptyhub's helper process (the reaper) died while the session ran; ptyhub killed the session's processes")

// watchReaper waits for rp's exit and, unless the manager is closing, records it as a
// fault (reaperDied). One goroutine per reaper started, ending with it.
func (m *Manager) watchReaper(rp *reaper.Reaper) {
	<-rp.Done()
	if h := watchReaperHook.Load(); h != nil {
		(*h)()
	}
	m.reaperDied(rp)
}

// watchReaperHook, when set (tests), runs in watchReaper between the reaper's exit and
// reaperDied: a test holds it to see the session's own path tell the death.
var watchReaperHook atomic.Pointer[func()]

// reaperDied records the death of rp as a fault, once per reaper, naming its sessions
// not yet seen exited; unless the manager is closing. Both watchReaper and the exit path
// of a session whose reaper died (before its exit is recorded) call it, so a result that
// reports such a session ended also carries the reaper's death: whichever comes first
// records it. Takes m.mu, then m.rmu, one after the other.
func (m *Manager) reaperDied(rp *reaper.Reaper) {
	if m.closing.Load() {
		return
	}
	m.rmu.Lock()
	told := m.deadTold[rp]
	m.rmu.Unlock()
	if told {
		return
	}
	var ids []string
	m.mu.Lock()
	for _, s := range m.sessions {
		if s.rp.Load() == rp && !s.isExited() {
			ids = append(ids, strconv.Itoa(s.id))
		}
	}
	m.mu.Unlock()
	// A call fails with ErrDead once the helper's socket is closed, which its exit does
	// just before its wait returns: wait for how it ended, within a bound (a helper that
	// closed its socket and lingers is told without it).
	select {
	case <-rp.Done():
	case <-time.After(5 * time.Second):
	}
	msg := fmt.Sprintf("ptyhub's helper process (the reaper, pid %d) died", rp.Pid())
	if how := rp.ExitText(); how != "" {
		msg += " (" + how + ")"
	}
	if len(ids) > 0 {
		msg += fmt.Sprintf("; its running sessions %s were ended and their processes killed", strings.Join(ids, ", "))
	}
	msg += "; the next session starts a new helper"
	m.rmu.Lock()
	if m.deadTold[rp] {
		m.rmu.Unlock()
		return // the other caller recorded it meanwhile
	}
	if m.deadTold == nil {
		m.deadTold = map[*reaper.Reaper]bool{}
	}
	m.deadTold[rp] = true
	m.faults = append(m.faults, msg)
	m.rmu.Unlock()
	m.log.Warn("reaper died", "pid", rp.Pid(), "status", rp.ExitText(), "sessions", len(ids))
}

// takeFaults returns the manager's faults client c has not been told of yet.
func (m *Manager) takeFaults(seen *int) []string {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	if *seen >= len(m.faults) {
		return nil
	}
	out := append([]string(nil), m.faults[*seen:]...)
	*seen = len(m.faults)
	return out
}

// sweepOrphaned ends the processes of s after its reaper died, and returns those it
// found. It waits for the kill sequence (at most the grace period and a few rounds).
func (s *Session) sweepOrphaned() []reaper.Survivor {
	leaderStart := s.leaderStart
	sw := newProcSweep(map[string]regEntry{s.uuid: {UUID: s.uuid, Leader: s.pid, LeaderStart: leaderStart}})
	members := func() []proc.Ref { return withLeader(sw.find(), s.pid, leaderStart) }
	found := members()
	var out []reaper.Survivor
	for _, r := range found {
		out = append(out, reaper.Survivor{PID: r.PID, Command: proc.CommandLine(r.PID)})
	}
	if len(found) > 0 {
		s.m.log.Warn("reaper died: killing the session's processes", "session", s.id, "processes", len(found))
		proc.Kill(found, members, reaper.DefaultGrace)
	}
	return out
}

// spawnError turns a failure to reach a reaper into an error a caller can act on; other
// errors are returned as they are.
func spawnError(err error) error {
	if errors.Is(err, reaper.ErrDead) {
		return fmt.Errorf("cannot start a session: ptyhub's helper process (the reaper) died twice in a row while starting it (%w); see the server's log, and try again", err)
	}
	if errors.Is(err, errNoReaper) {
		return fmt.Errorf("cannot start a session: %w", err)
	}
	return err
}
