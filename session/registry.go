package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/reaper"
	"github.com/ptyhub/ptyhub/transcript"
)

// The registry: one small file per live session in <StateDir>/registry, naming the
// session, its leader and the manager that owns it (pids with their start times, so a
// reused pid is never mistaken for them). The reaper ends every session when its manager
// dies; the registry covers what the reaper cannot: the manager and the reaper dying
// together (SIGKILL to both, the OOM killer). The next manager sweeps the sessions of
// owners that are gone (SPEC §3.6).

// regEntry is one registry file.
type regEntry struct {
	UUID        string `json:"uuid"`
	Leader      int    `json:"leader"`
	LeaderStart uint64 `json:"leader_start"`
	Owner       int    `json:"owner"`
	OwnerStart  uint64 `json:"owner_start"`
}

// registry is a Manager's view of the registry directory.
type registry struct {
	once   sync.Once
	dir    string // "" when unavailable: the registry is then off
	idFile string // where the bound of the short ids given so far is kept
	self   int
	start  uint64
}

// idBlock is how far ahead of the ids given the bound on disk is written: one small
// write per idBlock sessions.
const idBlock = 64

// idBound returns the bound of the short ids earlier managers of this state directory
// may have given (0 when none is recorded or the registry is off).
func (r *registry) idBound() int {
	if r.idFile == "" {
		return 0
	}
	b, err := os.ReadFile(r.idFile)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return max(n, 0)
}

// setIDBound records that no id above bound was given; ids up to it are never given
// again by a later manager. The file is replaced atomically.
func (r *registry) setIDBound(bound int) {
	if r.idFile == "" {
		return
	}
	tmp := r.idFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(bound)+"\n"), 0o600); err == nil {
		os.Rename(tmp, r.idFile)
	}
}

// init resolves and creates the directory, once, and starts sweeping stale entries aside.
func (r *registry) init(stateDir string, log func(string, ...any)) {
	r.once.Do(func() {
		if stateDir == "" {
			d, err := transcript.StateDir()
			if err != nil {
				return
			}
			stateDir = d
		}
		dir := filepath.Join(stateDir, "registry")
		if err := transcript.EnsureDir(dir); err != nil {
			log("registry off", "dir", dir, "err", err)
			return
		}
		r.dir, r.self = dir, os.Getpid()
		r.idFile = filepath.Join(stateDir, "session-ids")
		r.start = procStart(r.self)
		// The sweep goroutine ends once every stale session is gone (bounded by the
		// kill sequence's grace period).
		go r.sweepStale(log)
	})
}

func (r *registry) path(uuid string) string { return filepath.Join(r.dir, uuid+".json") }

// add records a started session. Errors cost only the registry entry.
func (r *registry) add(s *Session) {
	if r.dir == "" {
		return
	}
	b, _ := json.Marshal(regEntry{UUID: s.uuid, Leader: s.pid, LeaderStart: procStart(s.pid), Owner: r.self, OwnerStart: r.start})
	os.WriteFile(r.path(s.uuid), b, 0o600)
}

// remove forgets a session whose processes are gone.
func (r *registry) remove(s *Session) {
	if r.dir != "" {
		os.Remove(r.path(s.uuid))
	}
}

// sweepStale ends the processes of sessions whose owner is gone, then drops their entries.
func (r *registry) sweepStale(log func(string, ...any)) {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return
	}
	stale := map[string]regEntry{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(r.dir, e.Name()))
		if err != nil {
			continue
		}
		var en regEntry
		if json.Unmarshal(b, &en) != nil || en.UUID == "" {
			os.Remove(filepath.Join(r.dir, e.Name()))
			continue
		}
		if en.Owner > 0 && procStart(en.Owner) == en.OwnerStart && en.OwnerStart != 0 {
			continue // its manager is alive
		}
		stale[en.UUID] = en
	}
	if len(stale) == 0 {
		return
	}
	members := func() []int {
		pids := sessionProcs(stale)
		for _, en := range stale {
			if en.Leader > 0 && en.LeaderStart != 0 && procStart(en.Leader) == en.LeaderStart {
				pids = append(pids, en.Leader)
			}
		}
		return pids
	}
	found := members()
	if len(found) > 0 {
		log("sweeping processes left by a manager that died", "sessions", len(stale), "processes", len(found))
	}
	proc.Kill(found, members, reaper.DefaultGrace)
	for uuid := range stale {
		os.Remove(r.path(uuid))
	}
}

// sessionProcs lists live processes whose environment carries PTYHUB_SESSION=<uuid> for
// one of the given sessions (one pass over the process table).
func sessionProcs(sessions map[string]regEntry) []int {
	var pids []int
	self := os.Getpid()
	for _, p := range proc.List() {
		if p.PID == self || p.Dead() {
			continue
		}
		if v, ok := proc.Getenv(p.PID, reaper.EnvSession); ok {
			if _, mine := sessions[v]; mine {
				pids = append(pids, p.PID)
			}
		}
	}
	return pids
}

// procStart returns the start identifier of pid (see proc.Info.Start), 0 when it is gone
// or a zombie.
func procStart(pid int) uint64 { return proc.StartTime(pid) }

// Recover ends, aside, what sessions of managers that died (together with their reaper)
// left running, found in the registry of the state directory. A server calls it at start;
// otherwise it happens at a manager's first session.
func (m *Manager) Recover() { m.reg.init(m.opts.StateDir, m.log.Info) }
