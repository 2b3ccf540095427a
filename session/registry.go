package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/reaper"
	"github.com/ptyhub/ptyhub/transcript"
)

// The registry: one append-only log per manager in <StateDir>/registry
// (<pid>-<start>.log), a line per session start ("+" and the entry as JSON: the session,
// its leader and the manager that owns it, pids with their start times, so a reused pid
// is never mistaken for them) and per end ("-" and the uuid). The reaper ends every
// session when its manager dies; the registry covers what the reaper cannot: the manager
// and the reaper dying together (SIGKILL to both, the OOM killer). The next manager
// sweeps the sessions of owners that are gone. A start costs one write(2) to
// an open file, not a file created (and later removed) per session; the log is rewritten
// with only the live entries once most of its lines are dead. Files of the older layout
// (<uuid>.json per session) are swept the same way.

// regEntry is one registry entry.
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
	name   string // the log's file name in dir (logName)

	mu    sync.Mutex        // last in the lock order (doc.go): taken under Manager.mu or Session.mu
	log   *os.File          // this manager's log, opened at init; nil: the registry is off
	live  map[string][]byte // uuid → its "+" line, for rewriting the log
	lines int               // lines in the log
}

// idBlock is how many short ids a manager reserves at once: one locked update of the
// state directory's id file per idBlock sessions.
const idBlock = 64

// reserveIDs reserves n short ids no manager of this state directory has given or will
// give, in this process or another (the server, each ptyhub mcp): under an exclusive
// lock on session-ids.lock it reads the bound of the ids given so far from session-ids,
// writes max(bound, floor)+n and returns max(bound, floor)+1, the first of the block.
// floor is the last id this manager gave: whatever the file says, no id at or below it
// is given again. When the file cannot be updated (no state directory, read-only, full)
// it still returns the first id past both floor and the bound it could read, with the
// error: the caller then gives ids of its own from memory, unique within the manager
// and past every id recorded.
func (r *registry) reserveIDs(floor, n int) (first int, err error) {
	first = floor + 1
	err = r.updateIDs(func(bound int) int {
		first = max(bound, floor) + 1
		return first - 1 + n
	})
	return first, err
}

// updateIDs replaces the bound of the ids given by next(bound), under the lock. When the
// lock or the new file cannot be made, it calls next with the bound it can read and
// returns why the new bound was not written; a file that cannot be replaced (a full
// disk: no block for a new file) is rewritten in place, under the lock.
func (r *registry) updateIDs(next func(bound int) int) error {
	if r.idFile == "" {
		next(0)
		return errors.New("no state directory")
	}
	read := func() int {
		bound := 0
		if b, err := os.ReadFile(r.idFile); err == nil {
			bound, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			bound = max(bound, 0)
		}
		return bound
	}
	lock, err := os.OpenFile(r.idFile+".lock", os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		next(read())
		return err
	}
	defer lock.Close() // releases the lock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		next(read())
		return err
	}
	bound := read()
	nb := next(bound)
	if nb == bound {
		return nil
	}
	line := []byte(strconv.Itoa(nb) + "\n")
	tmp := r.idFile + ".tmp"
	err = os.WriteFile(tmp, line, 0o600)
	if err == nil {
		if err = os.Rename(tmp, r.idFile); err == nil {
			return nil
		}
	}
	os.Remove(tmp)
	// In place: the file's block is already there. A reader holds the lock too, so it
	// never sees the file half written.
	f, ferr := os.OpenFile(r.idFile, os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if ferr != nil {
		return err
	}
	defer f.Close()
	if _, werr := f.WriteAt(line, 0); werr != nil {
		return werr
	}
	return f.Truncate(int64(len(line)))
}

// returnIDs gives back the ids after given of a block reserved up to reserved, when no
// other manager reserved ids since: so the short ids stay dense when managers come and
// go one after another (every ptyhub mcp is one).
func (r *registry) returnIDs(given, reserved int) {
	r.updateIDs(func(bound int) int {
		if bound == reserved {
			return given
		}
		return bound
	})
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
		// The short ids are kept even with the registry off (read-only, as far as
		// reading the bound goes).
		r.idFile = filepath.Join(stateDir, "session-ids")
		dir := filepath.Join(stateDir, "registry")
		if err := transcript.EnsureDir(dir); err != nil {
			log("registry off", "dir", dir, "err", err)
			return
		}
		self := os.Getpid()
		start := procStart(self)
		name := logName(self, start, logSeq.Add(1)-1)
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
		if err != nil {
			log("registry off", "dir", dir, "err", err)
			return
		}
		holdLog(f)
		r.dir, r.self, r.start, r.name, r.log, r.live = dir, self, start, name, f, map[string][]byte{}
		// The sweep goroutine ends once every stale session is gone (bounded by the
		// kill sequence's grace period).
		go r.sweepStale(log)
	})
}

// logSeq numbers the managers of this process that opened a log (an embedder, or a test,
// may run several over one state directory): each has its own file, so none truncates
// another's entries or waits forever for another's lock on it (holdLog).
var logSeq atomic.Uint64

// logName is the name of the log of the manager numbered seq (logSeq) in process pid
// started at start: "<pid>-<start>.log" for the first, "<pid>-<start>-<seq>.log" after.
func logName(pid int, start, seq uint64) string {
	name := strconv.Itoa(pid) + "-" + strconv.FormatUint(start, 10)
	if seq > 0 {
		name += "-" + strconv.FormatUint(seq, 10)
	}
	return name + ".log"
}

// add records a started session: one append to the manager's log. Errors cost only the
// registry entry.
func (r *registry) add(s *Session) {
	if r.dir == "" {
		return
	}
	b, _ := json.Marshal(regEntry{UUID: s.uuid, Leader: s.pid, LeaderStart: s.leaderStart, Owner: r.self, OwnerStart: r.start})
	line := append(append([]byte{'+'}, b...), '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[s.uuid] = line
	r.append(line)
}

// remove forgets a session whose processes are gone.
func (r *registry) remove(s *Session) {
	if r.dir == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.live[s.uuid]; !ok {
		return
	}
	delete(r.live, s.uuid)
	if r.lines >= 64 && len(r.live)*4 < r.lines {
		r.rewrite()
		return
	}
	r.append([]byte("-" + s.uuid + "\n"))
}

// close closes the manager's log at its end, and removes it when no session is left in
// it (otherwise the next manager's sweep finds what is).
func (r *registry) close() {
	if r.dir == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil {
		return
	}
	r.log.Close()
	r.log = nil
	if len(r.live) == 0 {
		os.Remove(filepath.Join(r.dir, r.name))
	}
}

// append writes one line to the log. Called with r.mu held.
func (r *registry) append(line []byte) {
	if r.log == nil {
		return
	}
	if _, err := r.log.Write(line); err == nil {
		r.lines++
	}
}

// rewrite replaces the log by one holding only the live entries (written aside, then
// renamed over it, so a crash leaves the old log or the new one). Called with r.mu held.
func (r *registry) rewrite() {
	if r.log == nil {
		return
	}
	name := filepath.Join(r.dir, r.name)
	var buf []byte
	for _, line := range r.live {
		buf = append(buf, line...)
	}
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	holdLog(f) // before the rename: the log's name never points at a file not held
	if _, err := f.Write(buf); err != nil || os.Rename(tmp, name) != nil {
		f.Close()
		os.Remove(tmp)
		return
	}
	r.log.Close()
	r.log, r.lines = f, len(r.live)
}

// readEntries reads one registry file: a manager's log (its live entries) or an entry of
// the older one-file-per-session layout. Torn or unreadable lines are skipped.
func readEntries(path string) []regEntry {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []regEntry
	if strings.HasSuffix(path, ".json") {
		var en regEntry
		if json.Unmarshal(b, &en) == nil && en.UUID != "" {
			out = append(out, en)
		}
		return out
	}
	live := map[string]regEntry{}
	var order []string
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		switch {
		case len(line) > 1 && line[0] == '+':
			var en regEntry
			if json.Unmarshal(line[1:], &en) == nil && en.UUID != "" {
				if _, dup := live[en.UUID]; !dup {
					order = append(order, en.UUID)
				}
				live[en.UUID] = en
			}
		case len(line) > 1 && line[0] == '-':
			delete(live, string(line[1:]))
		}
	}
	for _, id := range order {
		if en, ok := live[id]; ok {
			out = append(out, en)
		}
	}
	return out
}

// sweepStale ends the processes of sessions whose owner is gone, then drops their entries.
func (r *registry) sweepStale(log func(string, ...any)) {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return
	}
	stale := map[string]regEntry{}
	var files []string // the files of owners that are gone, removed once their processes are
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(r.dir, name)
		if !strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, ".log") {
			// A rewrite's leftover: drop it once its owner is gone.
			if pid, start, ok := logOwner(strings.TrimSuffix(name, ".tmp")); ok && !ownerAlive(pid, start) && !logHeld(path) {
				os.Remove(path)
			}
			continue
		}
		if pid, start, ok := logOwner(name); ok && ownerAlive(pid, start) {
			continue // its manager is alive (this one, or another server of the directory)
		}
		if logHeld(path) {
			// Its manager is alive where its pid means another process or none: in
			// another pid namespace (a container sharing the directory).
			continue
		}
		alive := false
		for _, en := range readEntries(path) {
			if ownerAlive(en.Owner, en.OwnerStart) {
				alive = true
				continue
			}
			stale[en.UUID] = en
		}
		if !alive {
			files = append(files, path)
		}
	}
	if len(stale) == 0 {
		for _, f := range files {
			os.Remove(f)
		}
		return
	}
	sw := newProcSweep(stale)
	members := func() []proc.Ref {
		refs := sw.find()
		for _, en := range stale {
			refs = withLeader(refs, en.Leader, en.LeaderStart)
		}
		return refs
	}
	found := members()
	if len(found) > 0 {
		log("sweeping processes left by a manager that died", "sessions", len(stale), "processes", len(found))
	}
	proc.Kill(found, members, reaper.DefaultGrace)
	for _, f := range files {
		os.Remove(f)
	}
}

// holdLog takes an exclusive flock on a manager's log (transcript.Hold), kept until the
// file is closed (the manager's end, or its death): the sign that the manager lives that
// holds in every pid namespace, where its pid and start time hold only in its own (see
// logHeld). It waits for a sweep's look (logHeld's shared lock, held for a moment) rather
// than fail beside it. A failure costs only that sign.
func holdLog(f *os.File) { transcript.Hold(f) }

// logHeld reports whether a live manager holds the log at path (holdLog). A manager in
// another pid namespace sharing the state directory (a container with the user's home
// mounted) is not found by its pid: without this its sessions were taken for stale and
// killed, and its log removed. A log rewritten meanwhile (its name now another file,
// which a live manager made) counts as held.
func logHeld(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if transcript.Held(f) {
		return true
	}
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Stat(path, &b) != nil {
		return false
	}
	return a.Ino != b.Ino || a.Dev != b.Dev
}

// withLeader adds to refs the leader pid started at start, while it runs and is not in
// them already: the kill signals it as that process only (proc.Signal), so a pid reused
// since is never hit.
func withLeader(refs []proc.Ref, pid int, start uint64) []proc.Ref {
	if pid <= 0 || start == 0 || procStart(pid) != start {
		return refs
	}
	for _, r := range refs {
		if r.PID == pid {
			return refs
		}
	}
	return append(refs, proc.Ref{PID: pid, Start: start})
}

// ownerAlive reports whether the manager pid started at start still runs.
func ownerAlive(pid int, start uint64) bool {
	return pid > 0 && start != 0 && procStart(pid) == start
}

// logOwner parses the owner of a log from its name ("<pid>-<start>.log", or
// "<pid>-<start>-<seq>.log").
func logOwner(name string) (pid int, start uint64, ok bool) {
	base, found := strings.CutSuffix(name, ".log")
	if !found {
		return 0, 0, false
	}
	p, st, found := strings.Cut(base, "-")
	if !found {
		return 0, 0, false
	}
	if before, seq, more := strings.Cut(st, "-"); more {
		// The log of a later manager of that process (logName).
		if _, err := strconv.ParseUint(seq, 10, 64); err != nil {
			return 0, 0, false
		}
		st = before
	}
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(st, 10, 64)
	return pid, start, err1 == nil && err2 == nil
}

// procSweep finds the live processes of sessions whose reaper is gone (the reaper died,
// or the manager died with it): no subreaper holds their orphans any more, so they are
// found in the whole process table (see find). It remembers, from one round of a kill
// sequence to the next, the processes it found by their session id, as pid and start
// time; not safe for concurrent use (one kill sequence owns it).
type procSweep struct {
	sessions map[string]regEntry // uuid → its entry (leader and its start, when known)
	since    uint64              // the earliest leader start (0: unknown, any process)
	seen     map[int]uint64      // pid → start of the processes found by session id
}

func newProcSweep(sessions map[string]regEntry) *procSweep {
	since := uint64(math.MaxUint64)
	for _, en := range sessions {
		since = min(since, en.LeaderStart) // 0 (unknown): every process
	}
	return &procSweep{sessions: sessions, since: since, seen: map[int]uint64{}}
}

// find lists the live processes of the sessions (one pass over the process table, plus
// re-reads): those whose environment carries PTYHUB_SESSION=<uuid> of one of them, and
// every process sharing a session id with one of theirs. A session id is theirs when its
// session holds a process marked so, the session's leader (its pid's start time still
// the one recorded: the leader made the session with setsid, and a session leader never
// leaves its session), or a process find found by session id in an earlier round and
// still there (same pid and start time, same session id). Every member of a session
// descends from the process that made it with setsid, and no pid is reused while a
// session of that id has a member, so such a session is wholly theirs: this finds
// a process whose environment cannot be read (not dumpable: ssh-agent, a setuid
// program, an exec of a binary it cannot read) that stayed in a session of theirs, or
// left it with setsid beside a marked process. Only a process we may signal (never
// another user's) that started at or after the earliest leader is taken so.
//
// A process started at or after the earliest leader (0: any) whose environment shows
// nothing for the moment — between fork and exec, or inside an exec — is read again
// every millisecond, for at most 100 ms, until it shows one or is gone: taken for
// unmarked at that moment, it would be left out of its session's kill.
//
// It leaves out a ptyhub server a client started (reaper.IsServer), the members of its
// session and everything under it: a per-user server autostarted by a command of one of
// the sessions is the user's, and its sessions are swept by it (see reaper.EnvServer).
//
// What it cannot find: a process that left its session with setsid and whose new
// session holds nothing marked (its environment unreadable or without the entry), once
// its parents are gone — nothing that stays readable tells it from another program of
// the same user.
func (w *procSweep) find() []proc.Ref {
	var refs []proc.Ref
	taken := map[int]bool{}
	var again []proc.Info
	self := os.Getpid()
	table := proc.List()
	ours := map[int]bool{} // session ids of the sessions' processes
	for _, en := range w.sessions {
		if en.Leader > 0 && en.LeaderStart != 0 && procStart(en.Leader) == en.LeaderStart {
			ours[en.Leader] = true
		}
	}
	// A per-user server a client started, with its subtree and its session, is the
	// user's, not the sessions' (see reaper.EnvServer).
	users := reaper.UnderServers(table, reaper.IsServer)
	// mark takes p, whose environment reads v (ok: the entry is there), if it is marked
	// as one of the sessions', with its session id.
	mark := func(p proc.Info, v string, ok bool) {
		if _, mine := w.sessions[v]; ok && mine && !taken[p.PID] {
			taken[p.PID] = true
			refs = append(refs, p.Ref())
			if p.Sid > 1 {
				ours[p.Sid] = true
			}
		}
	}
	for _, p := range table {
		if p.PID == self || p.Dead() || users[p.PID] {
			continue
		}
		if st, ok := w.seen[p.PID]; ok && st == p.Start && p.Sid > 1 {
			ours[p.Sid] = true
		}
		v, ok, read := lookupEnv(p.PID, reaper.EnvSession)
		if !read {
			if p.Start >= w.since {
				again = append(again, p)
			}
			continue
		}
		mark(p, v, ok)
	}
	for try := 0; len(again) > 0 && try < 100; try++ {
		if rereadHook != nil {
			rereadHook()
		}
		time.Sleep(time.Millisecond)
		left := again[:0]
		for _, p := range again {
			v, ok, read := lookupEnv(p.PID, reaper.EnvSession)
			if !read {
				if procStart(p.PID) == p.Start {
					left = append(left, p) // the same process, alive: not yet
				}
				continue
			}
			if procStart(p.PID) == p.Start {
				mark(p, v, ok)
			}
		}
		again = left
	}
	seen := make(map[int]uint64, len(w.seen))
	for _, p := range table {
		if !ours[p.Sid] || p.PID == self || p.Dead() || users[p.PID] || p.Start < w.since || !proc.Signalable(p.PID) {
			continue
		}
		seen[p.PID] = p.Start
		if !taken[p.PID] {
			taken[p.PID] = true
			refs = append(refs, p.Ref())
		}
	}
	w.seen = seen
	return refs
}

// lookupEnv is proc.LookupEnv; a test stands in for it to show a process as caught
// inside an exec (a window it cannot hold open).
var lookupEnv = proc.LookupEnv

// rereadHook, when set (tests), runs before each of sessionProcs' rounds of reading
// again the processes that showed no environment.
var rereadHook func()

// procStart returns the start identifier of pid (see proc.Info.Start), 0 when it is gone
// or a zombie.
func procStart(pid int) uint64 { return proc.StartTime(pid) }

// Recover ends, aside, what sessions of managers that died (together with their reaper)
// left running, found in the registry of the state directory. A server calls it at start;
// otherwise it happens at a manager's first session.
func (m *Manager) Recover() { m.reg.init(m.opts.StateDir, m.log.Info) }
