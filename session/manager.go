package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/ptyhub/ptyhub/broadcast"
	"github.com/ptyhub/ptyhub/pty"
	"github.com/ptyhub/ptyhub/reaper"
	"github.com/ptyhub/ptyhub/shellint"
)

// Options configure a Manager. The zero value is usable.
type Options struct {
	// MaxSessions is the limit of running sessions of one pool (default 64): each
	// client started with NewClient or NewClientFor is its own pool, clients made with
	// NewPoolClient share theirs. WarnSessions is the count from which that pool's
	// results warn (default MaxSessions less 1/16th: 60 of 64); ProtectRecent how many
	// most recently used sessions of the pool are never pruned (default 8).
	MaxSessions, WarnSessions, ProtectRecent int
	// KeepExited bounds the sessions of one pool that have ended and are kept as history
	// (output and state readable); past it the oldest go, without warning (default 64).
	// KeepExitedBytes bounds the output they keep in memory (default 64 MiB; the
	// newest ended session is always kept).
	KeepExited      int
	KeepExitedBytes int64
	// Retain is the per-session in-memory output ring size (default 4 MiB).
	Retain int
	// Logger receives operational logs (default: discard).
	Logger *slog.Logger
	// StateDir is ptyhub's state directory; transcripts go to StateDir/sessions
	// (default $XDG_STATE_HOME/ptyhub, else ~/.local/state/ptyhub). Tests set it.
	StateDir string
	// SpareIDFile is where short ids are reserved when the state directory's id file
	// cannot be updated (a read-only or full disk): a file of this user's that every
	// manager whose sessions one listing shows shares (the server socket's path with
	// ".ids"). Empty: ids then continue from memory, unique within this manager only.
	SpareIDFile string
	// NoRecord turns transcripts off.
	NoRecord bool
	// RecordCap is the size cap of one transcript (default 256 MiB).
	RecordCap int64
	// RecordKeep and RecordKeepBytes are the retention of old transcripts, by age
	// and total size (default a week and 1 GiB; negative: no limit).
	RecordKeep      time.Duration
	RecordKeepBytes int64
}

// Manager owns sessions. It is safe for concurrent use. Close ends every session.
type Manager struct {
	opts Options
	log  *slog.Logger

	reg registry
	// rmu guards reaper, holdLeaders, faults and deadTold. The reaper is started on first use and
	// again after it died (reaperdeath.go); each session keeps the one it was started by.
	// Lock order (doc.go): a leaf, taken after Client.mu; no other lock is taken while
	// rmu is held.
	rmu         sync.Mutex
	reaper      *reaper.Reaper
	holdLeaders bool                    // read exit statuses from /proc instead of waiting for the reaper
	faults      []string                // what went wrong in the manager itself, told once to each client
	deadTold    map[*reaper.Reaper]bool // the reapers whose death is in faults (reaperDied)
	closing     atomic.Bool             // Close has begun: a reaper's exit is no fault

	// floodLag is how long a flood's last output may wait for the recorder (0: the
	// constant floodLag); set by tests only.
	floodLag time.Duration
	// holdExit, when set (by tests only), runs at the start of each session's exit path:
	// it stands for an exit report that a loaded machine delays.
	holdExit func()
	// holdRecord, when set (by tests only), runs at the start of each recorder's first
	// run, before it creates the transcript's files: it stands for a recorder goroutine
	// that a loaded machine runs late, or a slow disk. recordWait is how long a result
	// waits for that attempt (0: the constant recordWait); set by tests only.
	holdRecord func()
	recordWait time.Duration

	// mu guards the fields below. Lock order (doc.go): after collectMu and Client.mu;
	// before Session.mu and registry.mu.
	mu      sync.Mutex
	nextID  int
	idBound int // the end of the block of ids reserved (registry.reserveIDs); nextID < idBound: ids left
	// idsFromMemory: a block of ids could not be written to the state directory (said once).
	idsFromMemory bool
	sessions      map[int]*Session
	pools         map[string]map[int]*Session // pool name → its sessions (those in sessions)
	ended         map[string]map[int]*Session // pool name → its sessions that have ended (admit: O(ended), not O(pool))
	leaving       map[string]int              // pool name → its running sessions pruned, not yet ended (Session.leaving)
	poolSeq       int                         // names the private pools of clients
	live          int                         // sessions whose exit is not yet recorded
	closed        bool
	gen           uint64        // changes when a session starts, ends or is removed (watch.go)
	changes       []watchChange // the latest changes, in generation order (watch.go)
	genCh         chan struct{} // closed at the next change; nil until someone waits
	// starts counts starts under way; added to only under mu while !closed, so Close
	// can wait for them after setting closed.
	starts sync.WaitGroup

	recs recorders // record.go: live transcript writers; Close waits for them

	shells shellint.Dir // shell.go: the shell integration's scripts, removed by Close

	// releasing counts removed sessions whose resources are still being released
	// (their transcript is finishing); tests wait on it.
	releasing sync.WaitGroup
}

// drop takes s out of the table and its pool.
func (m *Manager) drop(s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[s.id] == s {
		m.leftLocked(s)
		m.bumpLocked(s)
		delete(m.sessions, s.id)
		delete(m.pools[s.pool], s.id)
		if len(m.pools[s.pool]) == 0 {
			delete(m.pools, s.pool)
		}
		delete(m.ended[s.pool], s.id)
		if len(m.ended[s.pool]) == 0 {
			delete(m.ended, s.pool)
		}
	}
}

// endedLocked counts s as ended: one running session fewer, and, while it is in the
// table, history of its pool. Called with m.mu held, once per session, when its exit
// status is known.
func (m *Manager) endedLocked(s *Session) {
	m.live--
	m.leftLocked(s)
	if m.sessions[s.id] != s {
		return
	}
	if m.ended[s.pool] == nil {
		m.ended[s.pool] = map[int]*Session{}
	}
	m.ended[s.pool][s.id] = s
}

// forget takes s out of the table (the caller may have done so) and releases what it
// holds once its processes are gone: it ends them first if they still run. Nothing of
// the session stays reachable from the manager afterwards: its ring, screen model,
// transcript writer and spill file go with it. Safe to call more than once.
func (m *Manager) forget(s *Session) {
	m.drop(s)
	s.mu.Lock()
	already := s.removed
	s.removed = true
	s.mu.Unlock()
	if already {
		return
	}
	m.log.Debug("session removed", "session", s.id)
	if !s.isExited() {
		s.kill(false)
	}
	m.releasing.Add(1)
	s.rec.remove(m.releasing.Done)
}

// NewManager returns a manager. It starts no process until the first session.
func NewManager(opts Options) (*Manager, error) {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 64
	}
	if opts.WarnSessions <= 0 {
		opts.WarnSessions = max(1, opts.MaxSessions-opts.MaxSessions/16)
	}
	if opts.KeepExited <= 0 {
		opts.KeepExited = 64
	}
	if opts.KeepExitedBytes <= 0 {
		opts.KeepExitedBytes = 64 << 20
	}
	if opts.ProtectRecent <= 0 {
		opts.ProtectRecent = 8
	}
	if opts.Retain <= 0 {
		opts.Retain = broadcast.DefaultRetain
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{opts: opts, log: opts.Logger, sessions: map[int]*Session{}, pools: map[string]map[int]*Session{}, ended: map[string]map[int]*Session{}, leaving: map[string]int{}}, nil
}

// startReaper returns the helper process, started on first use or again when the last
// one died, and whether leaders are held (see reaper.Spec.Hold).
func (m *Manager) startReaper() (*reaper.Reaper, bool, error) {
	m.reg.init(m.opts.StateDir, m.log.Info)
	m.rmu.Lock()
	defer m.rmu.Unlock()
	if m.reaper != nil && !m.reaper.Dead() {
		return m.reaper, m.holdLeaders, nil
	}
	rp, err := reaper.Start(m.log)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", errNoReaper, err)
	}
	m.reaper, m.holdLeaders = rp, rp.CanReadExitStatus()
	go m.watchReaper(rp)
	return rp, m.holdLeaders, nil
}

// NewClient returns a handle for one agent or CLI connection whose sessions start in this
// process's working directory and environment (the zero Caller). Results given to this
// client list the sessions it started that ended since its previous call. Sessions started
// through the client are owned by it: Close ends them unless keep is set.
func (m *Manager) NewClient(name string) *Client {
	return &Client{m: m, name: name, pool: m.privatePool()}
}

// NewPoolClient is NewClientFor for a client whose sessions count in the shared pool
// named pool (the server puts every CLI connection in one) rather than in a pool of
// its own.
func (m *Manager) NewPoolClient(name, pool string, caller Caller) (*Client, error) {
	if err := caller.Check(); err != nil {
		return nil, err
	}
	return &Client{m: m, name: name, caller: caller, pool: sharedPool(pool)}, nil
}

// sharedPool is the pool of NewPoolClient's clients of pool name.
func sharedPool(name string) string { return "shared:" + name }

// privatePool names a new pool of one client.
func (m *Manager) privatePool() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.poolSeq++
	return "client:" + strconv.Itoa(m.poolSeq)
}

// NewClientFor is NewClient for a client whose sessions start in caller's directory and
// environment (see Caller), such as a connection to the server. It returns an ErrInvalid
// error when caller fails Caller.Check.
func (m *Manager) NewClientFor(name string, caller Caller) (*Client, error) {
	if err := caller.Check(); err != nil {
		return nil, err
	}
	return &Client{m: m, name: name, caller: caller, pool: m.privatePool()}, nil
}

// Close ends every session (whole process trees) and the reaper, then returns. Starts
// that began before it complete first and their sessions are ended too; later starts fail.
func (m *Manager) Close(ctx context.Context) error {
	m.closing.Store(true)
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	// No start can begin now (it checks closed under m.mu); wait for those under way, so
	// their sessions are in the map and the reaper, if one of them started it, is set.
	m.starts.Wait()
	m.mu.Lock()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	given, reserved := m.nextID, m.idBound
	m.mu.Unlock()
	if reserved > given {
		m.reg.returnIDs(given, reserved)
	}
	defer m.shells.Close()
	m.rmu.Lock()
	rp := m.reaper
	m.rmu.Unlock()
	if rp == nil {
		return nil
	}
	// One sweep of everything the reaper started (one walk of its process tree per
	// round), not one per session: closing costs O(processes), not O(sessions²).
	if _, err := rp.Kill("", reaper.DefaultGrace, false); err != nil && !errors.Is(err, reaper.ErrDead) {
		m.log.Warn("close: kill all", "err", err)
	}
wait:
	for _, s := range all {
		select {
		case <-s.exited:
		case <-ctx.Done():
			break wait
		}
	}
	m.recs.closeAll(ctx)
	m.reg.close()
	return rp.Close(5 * time.Second)
}

// Running counts the sessions whose program has not exited.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.sessions {
		if !s.isExited() {
			n++
		}
	}
	return n
}

// lookup finds a session by short id, UUID, unique UUID prefix or name (names.go).
func (m *Manager) lookup(id string) (*Session, error) { return m.lookupIn("", id) }

// lookupID finds a session by short id, UUID or unique UUID prefix.
func (m *Manager) lookupID(id string) (*Session, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, fmt.Errorf("%w: session_id is required", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, err := strconv.Atoi(id); err == nil {
		if s, ok := m.sessions[n]; ok {
			return s, nil
		}
		return nil, fmt.Errorf("%w %s: no such session (ids are never reused)", ErrNotFound, id)
	}
	var found *Session
	for _, s := range m.sessions {
		if strings.HasPrefix(s.uuid, strings.ToLower(id)) {
			if found != nil {
				return nil, fmt.Errorf("%w: session id prefix %q is ambiguous", ErrInvalid, id)
			}
			found = s
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w %s: no such session", ErrNotFound, id)
	}
	return found, nil
}

// noteEnded tells the session's owner that it ended.
func (m *Manager) noteEnded(s *Session) {
	s.mu.Lock()
	owner := s.owner
	s.mu.Unlock()
	if owner != nil {
		owner.noteEnded(s)
	}
}

// admitLocked makes room in pool for one more running session. Called with m.mu held,
// in the critical section that then adds the session to the pool (start), so any number
// of concurrent starts never run more than Options.MaxSessions sessions of one pool.
// Only running sessions count, and of those not the ones already being pruned: at the
// limit the least recently used one that is not protected (one of the
// Options.ProtectRecent most recently used, a call in flight, a human attached) is
// chosen and marked pruned; it returns that victim for the caller to kill once m.mu is
// released, or ErrLimit when every running session is protected. O(running sessions of
// the pool), only at the limit.
func (m *Manager) admitLocked(pool string) (victim *Session, err error) {
	n := len(m.pools[pool]) - len(m.ended[pool]) - m.leaving[pool]
	if n < m.opts.MaxSessions {
		return nil, nil
	}
	running := make([]*Session, 0, n)
	for id, s := range m.pools[pool] {
		if m.ended[pool][id] == nil && !s.leaving {
			running = append(running, s)
		}
	}
	for {
		victim = m.pruneCandidate(running)
		if victim == nil {
			return nil, fmt.Errorf("%w: %d running sessions, the limit of one client (ptyhub serve --max-sessions, or $PTYHUB_MAX_SESSIONS), and none can be ended to make room: each is one of the %d most recently used, has a call in flight or has a human attached", ErrLimit, n, m.opts.ProtectRecent)
		}
		// A call marks its session in flight under victim.mu alone (Session.begin): the
		// mark and the choice are settled in one hold of it.
		victim.mu.Lock()
		free := victim.inFlight == 0
		if free {
			victim.pruned = true
		}
		victim.mu.Unlock()
		if free {
			break
		}
		running = slices.DeleteFunc(running, func(s *Session) bool { return s == victim })
	}
	victim.leaving = true
	m.leaving[pool]++
	return victim, nil
}

// leftLocked stops counting s as leaving its pool (see admitLocked) once its end is
// recorded or it is dropped. Called with m.mu held; safe to call more than once.
func (m *Manager) leftLocked(s *Session) {
	if !s.leaving {
		return
	}
	s.leaving = false
	if m.leaving[s.pool]--; m.leaving[s.pool] <= 0 {
		delete(m.leaving, s.pool)
	}
}

// admitted ends the victim admitLocked chose, trims the pool's history and returns the
// start's warnings; n is the running count of the pool with the new session. Called
// without m.mu.
func (m *Manager) admitted(pool string, victim *Session, n int, ended []*Session) []string {
	var warns []string
	if victim != nil {
		victim.kill(false)
		m.log.Info("session limit: pruned the least recently used session", "session", victim.id, "pool", pool, "limit", m.opts.MaxSessions)
		warns = append(warns, fmt.Sprintf("limit of %d running sessions reached: ended the least recently used one, session %d (%s); it is listed as pruned", m.opts.MaxSessions, victim.id, victim.command))
	}
	if n >= m.opts.WarnSessions {
		warns = append(warns, fmt.Sprintf("%d of %d running sessions; at the limit the least recently used is ended (removing a session frees its place)", n, m.opts.MaxSessions))
	}
	m.trimHistory(ended)
	return warns
}

// trimHistory forgets the oldest of a pool's ended sessions past Options.KeepExited, or
// once the output the newer ones keep in memory passes Options.KeepExitedBytes (their
// transcripts stay on disk). A session with a call in flight or a human attached stays.
func (m *Manager) trimHistory(ended []*Session) {
	sort.Slice(ended, func(i, j int) bool { return ended[i].endedAt().After(ended[j].endedAt()) })
	var kept int
	var bytes int64
	for _, s := range ended {
		held := s.hub.End() - s.hub.Start()
		if kept+1 < m.opts.KeepExited && (kept == 0 || bytes+held <= m.opts.KeepExitedBytes) || s.busy() || s.humanAttached() {
			kept++
			bytes += held
			continue
		}
		m.forget(s)
	}
}

// pruneCandidate picks the least recently used of the running sessions, never one of the
// ProtectRecent most recent, never one with a call in flight, never one a human is
// attached to.
func (m *Manager) pruneCandidate(running []*Session) *Session {
	if len(running) <= m.opts.ProtectRecent {
		return nil
	}
	last := make(map[*Session]time.Time, len(running))
	for _, s := range running {
		s.mu.Lock()
		last[s] = s.lastUsed
		s.mu.Unlock()
	}
	sort.Slice(running, func(i, j int) bool { return last[running[i]].Before(last[running[j]]) })
	for _, s := range running[:len(running)-m.opts.ProtectRecent] {
		if !s.busy() && !s.humanAttached() {
			return s
		}
	}
	return nil
}

// busy reports whether a call is in flight on s.
func (s *Session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight > 0
}

// endedAt is when the exit was recorded.
func (s *Session) endedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitedAt
}

// start validates req and starts a session owned by owner.
func (m *Manager) start(req *ExecRequest, owner *Client) (*Session, []string, error) {
	profile, rows, cols, err := startShape(req)
	if err != nil {
		return nil, nil, err
	}
	id := uuid.Must(uuid.NewV7()).String()
	dir, env, err := startWorld(req, owner.caller, &owner.worlds, profile, id)
	if err != nil {
		return nil, nil, err
	}
	tty := req.TTY == nil || *req.TTY
	argv, command := startArgv(req, env)
	shell, err := m.integrate(req, tty, &argv, &env)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return nil, nil, fmt.Errorf("%w: the command contains a NUL byte", ErrInvalid)
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, nil, errors.New("session: manager is closed")
	}
	m.starts.Add(1) // Close waits for this start to finish
	live := m.live
	m.mu.Unlock()
	defer m.starts.Done()
	pool := owner.pool
	if err := m.checkFDs(live); err != nil {
		return nil, nil, err
	}
	rp, _, err := m.startReaper()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	// inFlight 1: the caller's call owns the session from its first moment, so no other
	// start prunes it while that call waits for its output.
	s := &Session{m: m, uuid: id, command: command, tty: tty, profile: profile,
		started: now, lastUsed: now, rows: rows, cols: cols, owner: owner, pool: pool,
		hub:  broadcast.New(m.opts.Retain),
		quit: make(chan struct{}), exited: make(chan struct{}), drained: make(chan struct{}),
		inFlight: 1, spawned: make(chan struct{})}
	defer close(s.spawned) // the program started, or could not: see waitSpawned
	s.name = req.Name
	s.rp.Store(rp)
	if shell != "" {
		s.sh = shellint.NewTracker(shell, getenv(env, "PWD"))
	}
	// One critical section: the name, the limit (and the choice of a session to prune)
	// and the new session's place in the pool.
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, nil, errors.New("session: manager is closed")
	}
	if req.Name != "" {
		// Checked again here, where sessions are added: of two concurrent starts with
		// one name, the second gets the first's session.
		for _, o := range m.pools[pool] {
			if o.name == req.Name && !o.isExited() {
				m.mu.Unlock()
				return nil, nil, &nameTaken{o}
			}
		}
	}
	victim, err := m.admitLocked(pool)
	if err != nil {
		m.mu.Unlock()
		return nil, nil, err
	}
	s.id = m.nextIDLocked()
	m.sessions[s.id] = s
	m.bumpLocked(s)
	if m.pools[pool] == nil {
		m.pools[pool] = map[int]*Session{}
	}
	m.pools[pool][s.id] = s
	m.live++
	live = m.live
	running := len(m.pools[pool]) - len(m.ended[pool]) - m.leaving[pool]
	ended := make([]*Session, 0, len(m.ended[pool]))
	for _, e := range m.ended[pool] {
		ended = append(ended, e)
	}
	m.mu.Unlock()
	warns := m.admitted(pool, victim, running, ended)

	path, lerr := lookPath(argv[0], getenv(env, "PATH"), dir)
	if lerr == nil {
		lerr = s.spawn(reaper.Spec{Path: path, Argv: argv, Env: env, Dir: dir, Tag: id}, rows, cols)
		if errors.Is(lerr, reaper.ErrDead) {
			// The helper died between its start and this spawn: once more with a new one.
			lerr = s.spawn(reaper.Spec{Path: path, Argv: argv, Env: env, Dir: dir, Tag: id}, rows, cols)
		}
		if rerr := spawnError(resourceError(lerr, live-1)); rerr != lerr {
			// Out of descriptors, ptys or processes: no session, an error that names
			// the limit (never an exit code that means something else).
			m.mu.Lock()
			m.live--
			m.mu.Unlock()
			m.drop(s)
			m.log.Warn("session not started", "err", rerr)
			return nil, nil, rerr
		}
	}
	if lerr != nil {
		m.notRunnable(s, argv[0], lerr)
		return s, warns, nil
	}
	m.log.Debug("session started", "session", s.id, "pid", s.pid, "command", command, "pool", pool, "running", live)
	if req.TimeoutMs > 0 {
		s.mu.Lock()
		s.timer = time.AfterFunc(time.Duration(req.TimeoutMs)*time.Millisecond, func() { s.kill(true) })
		s.mu.Unlock()
	}
	return s, warns, nil
}

// startShape validates req's command, profile, size, timeout and stdin, and returns the
// profile and size with their defaults.
func startShape(req *ExecRequest) (profile string, rows, cols int, err error) {
	if (req.Cmd == "") == (len(req.Argv) == 0) {
		return "", 0, 0, fmt.Errorf("%w: give exactly one of cmd (a shell command line) and argv (a program and its arguments)", ErrInvalid)
	}
	profile = req.Profile
	switch profile {
	case "":
		profile = ProfileAgent
	case ProfileAgent, ProfilePlain:
	default:
		return "", 0, 0, argError("profile", fmt.Sprintf(" must be agent or plain, not %q", req.Profile))
	}
	rows, cols = req.Rows, req.Cols
	if rows == 0 {
		rows = DefaultRows
	}
	if cols == 0 {
		cols = DefaultCols
	}
	if rows < 1 || rows > MaxRows || cols < 1 || cols > MaxCols {
		return "", 0, 0, &ArgError{Arg: "rows", Problem: " and ", Other: "cols", After: fmt.Sprintf(" must be 1 to %d (got %dx%d)", MaxRows, rows, cols)}
	}
	if req.TimeoutMs < 0 {
		return "", 0, 0, argError("timeout_ms", fmt.Sprintf(" must be positive (got %d ms)", req.TimeoutMs))
	}
	if len(req.Stdin) > MaxInputBytes {
		return "", 0, 0, fmt.Errorf("%w: stdin is %d bytes, more than %d; write the data to a file and pass its name", ErrInvalid, len(req.Stdin), MaxInputBytes)
	}
	return profile, rows, cols, nil
}

// startWorld returns the directory and environment of session id: the caller's (the
// process's own for the zero Caller), with req's workdir and environment applied. The
// environment of a caller with a directory is built from worlds, once per world.
func startWorld(req *ExecRequest, caller Caller, worlds *worldCache, profile, id string) (dir string, env []string, err error) {
	base, baseEnv := caller.Dir, caller.Env
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", nil, fmt.Errorf("session: working directory: %w", err)
		}
		base, baseEnv = wd, os.Environ()
	}
	if dir, err = resolveWorkdir(base, req.Workdir); err != nil {
		return "", nil, err
	}
	var eb *envBase
	if caller.Dir == "" {
		// The process's own environment may have changed since the last start.
		eb = newEnvBase(baseEnv, dir, profile, req.ClearEnv)
	} else {
		eb = worlds.base(baseEnv, dir, profile, req.ClearEnv)
	}
	env, err = eb.with(req.Env, id)
	return dir, env, err
}

// startArgv returns the argv of req (a cmd runs with the shell's -c, or -lc) and the
// command as the session shows it.
func startArgv(req *ExecRequest, env []string) (argv []string, command string) {
	if req.Cmd == "" {
		argv = append([]string(nil), req.Argv...)
		return argv, strings.Join(argv, " ")
	}
	shell := req.Shell
	if shell == "" {
		shell = defaultShell(env)
	}
	flag := "-c"
	if req.Login {
		flag = "-lc"
	}
	return []string{shell, flag, req.Cmd}, req.Cmd
}

// nextIDLocked returns the next short session id. Called with m.mu held.
func (m *Manager) nextIDLocked() int {
	if m.nextID >= m.idBound {
		// Short ids are never reused for a user and never given by two managers (the
		// server and every ptyhub mcp hosting its sessions): each takes blocks from the
		// state directory.
		// Whatever the disk does, an id at or below one given is never given again: a
		// block that cannot be written continues from memory (and is said once).
		first, err := m.reg.reserveIDs(m.nextID, idBlock)
		how := "continuing from memory: unique within this process only"
		if err != nil && m.opts.SpareIDFile != "" {
			spare := registry{idFile: m.opts.SpareIDFile}
			var serr error
			if first, serr = spare.reserveIDs(max(m.nextID, first-1), idBlock); serr == nil {
				how = "reserving them in " + m.opts.SpareIDFile
			}
		}
		m.nextID = max(m.nextID, first-1)
		m.idBound = m.nextID + idBlock
		if err != nil && !m.idsFromMemory {
			m.idsFromMemory = true
			m.log.Warn("short session ids: the state directory's id file cannot be updated; "+how+", past every id recorded", "from", m.nextID+1, "err", err)
		}
	}
	m.nextID++
	return m.nextID
}

// notRunnable ends s, whose program argv0 was not found or cannot run (lerr): the
// session exists, exited with 127 (126 when found but not executable), and says why, as
// a shell would.
func (m *Manager) notRunnable(s *Session, argv0 string, lerr error) {
	code := 127
	what := "command not found"
	if errors.Is(lerr, os.ErrPermission) {
		code, what = 126, "permission denied"
	} else if !errors.Is(lerr, os.ErrNotExist) {
		what = lerr.Error()
	}
	s.hub.Write([]byte(fmt.Sprintf("ptyhub: %s: %s\r\n", argv0, what)))
	s.hub.Close()
	s.exit = pty.ExitStatus{Code: code}
	s.exitedAt = time.Now()
	close(s.drained)
	m.noteEnded(s)
	m.mu.Lock()
	m.endedLocked(s)
	m.mu.Unlock()
	close(s.exited)
	close(s.quit)
	m.bump(s)
}

// Client is one caller's view of a Manager; it implements Service.
type Client struct {
	m      *Manager
	name   string
	caller Caller // immutable
	pool   string // immutable: the pool its sessions count in (see Options.MaxSessions)

	// mu guards ended. Lock order (doc.go): after Session.collectMu, before Manager.mu
	// and Manager.rmu.
	mu    sync.Mutex
	ended []Ended

	faultsSeen int // the manager's faults this client was told of (guarded by m.rmu)

	worlds worldCache // the environments its sessions start from, by world (env.go)
}

var _ Service = (*Client)(nil)

func (c *Client) noteEnded(s *Session) {
	e := s.endedRecord()
	c.mu.Lock()
	c.ended = append(c.ended, e)
	if len(c.ended) > 256 {
		c.ended = c.ended[len(c.ended)-256:]
	}
	c.mu.Unlock()
}

// notices drains the ended sessions this client has not been told of, leaving out the
// session a result already reports (skip).
func (c *Client) notices(skip *Session, warns []string) Notices {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := Notices{EndedSinceLastCall: []Ended{}, Warnings: append(warns, c.m.takeFaults(&c.faultsSeen)...)}
	if n.Warnings == nil {
		n.Warnings = []string{}
	}
	for _, e := range c.ended {
		if skip != nil && e.SessionID == strconv.Itoa(skip.id) {
			continue
		}
		n.EndedSinceLastCall = append(n.EndedSinceLastCall, e)
	}
	c.ended = c.ended[:0]
	c.mu.Unlock()
	// The facts come from the table: a notice holds no session (a removed one is
	// garbage, and its notice has no facts).
	for i, e := range n.EndedSinceLastCall {
		if id, err := strconv.Atoi(e.SessionID); err == nil {
			c.m.mu.Lock()
			s := c.m.sessions[id]
			c.m.mu.Unlock()
			if s != nil {
				n.EndedSinceLastCall[i].Completion = s.completion(true)
			}
		}
	}
	c.mu.Lock()
	return n
}

// Close ends the sessions this client started, unless keep is true (then they stay with
// the manager for a human to find). It waits until their processes are gone, or until
// ctx ends (then it returns an error wrapping the context's cause while the kills go
// on).
func (c *Client) Close(ctx context.Context, keep bool) error {
	c.m.mu.Lock()
	var mine []*Session
	for _, s := range c.m.sessions {
		s.mu.Lock()
		if s.owner == c {
			mine = append(mine, s)
			if keep {
				s.owner = nil
			}
		}
		s.mu.Unlock()
	}
	c.m.mu.Unlock()
	if keep {
		return nil
	}
	var wg sync.WaitGroup
	for _, s := range mine {
		if !s.isExited() {
			wg.Go(func() { s.kill(false) }) // ends when the session's processes are gone
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// The kills carry on; the caller stops waiting for them.
		return fmt.Errorf("session: closing client %q: %w", c.name, context.Cause(ctx))
	}
}

// endedRecord describes the session's end; the exit status must be recorded.
func (s *Session) endedRecord() Ended {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := Ended{SessionID: strconv.Itoa(s.id), Command: s.command, TimedOut: s.timedOut, Pruned: s.pruned}
	if s.exit.Signal != 0 {
		e.Signal = s.exit.SignalName()
	} else {
		code := s.exit.Code
		e.ExitCode = &code
	}
	return e
}
