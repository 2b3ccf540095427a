package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/ptyhub/ptyhub/broadcast"
	"github.com/ptyhub/ptyhub/pty"
	"github.com/ptyhub/ptyhub/reaper"
)

// Options configure a Manager. The zero value is usable.
type Options struct {
	// MaxSessions is the session limit (default 64); WarnSessions the count from which
	// results warn (default 60); ProtectRecent how many most recently used sessions are
	// never pruned (default 8).
	MaxSessions, WarnSessions, ProtectRecent int
	// Retain is the per-session in-memory output ring size (default 4 MiB).
	Retain int
	// Logger receives operational logs (default: discard).
	Logger *slog.Logger
	// StateDir is ptyhub's state directory; transcripts go to StateDir/sessions
	// (default $XDG_STATE_HOME/ptyhub, else ~/.local/state/ptyhub). Tests set it.
	StateDir string
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

	reg         registry
	reaperOnce  sync.Once
	reaper      *reaper.Reaper
	reaperErr   error
	holdLeaders bool // read exit statuses from /proc instead of waiting for the reaper

	mu       sync.Mutex
	nextID   int
	sessions map[int]*Session
	closed   bool

	recs recorders // record.go: live transcript writers; Close waits for them

	// releasing counts removed sessions whose resources are still being released
	// (their transcript is finishing); tests wait on it.
	releasing sync.WaitGroup
}

// forget takes s out of the table (the caller may have done so) and releases what it
// holds once its processes are gone: it ends them first if they still run. Nothing of
// the session stays reachable from the manager afterwards: its ring, screen model,
// transcript writer and spill file go with it. Safe to call more than once.
func (m *Manager) forget(s *Session) {
	m.mu.Lock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
	m.mu.Unlock()
	s.mu.Lock()
	already := s.removed
	s.removed = true
	s.mu.Unlock()
	if already {
		return
	}
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
		opts.WarnSessions = min(60, opts.MaxSessions)
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
	return &Manager{opts: opts, log: opts.Logger, sessions: map[int]*Session{}}, nil
}

// startReaper starts the helper process on first use.
func (m *Manager) startReaper() error {
	m.reg.init(m.opts.StateDir, m.log.Info)
	m.reaperOnce.Do(func() {
		m.reaper, m.reaperErr = reaper.Start(m.log)
		m.holdLeaders = m.reaperErr == nil && m.reaper.CanReadExitStatus()
	})
	return m.reaperErr
}

// NewClient returns a handle for one agent or CLI connection whose sessions start in this
// process's working directory and environment (the zero Caller). Results given to this
// client list the sessions it started that ended since its previous call. Sessions started
// through the client are owned by it: Close ends them unless keep is set.
func (m *Manager) NewClient(name string) *Client {
	return &Client{m: m, name: name}
}

// NewClientFor is NewClient for a client whose sessions start in caller's directory and
// environment (see Caller), such as a connection to the server. It returns an ErrInvalid
// error when caller fails Caller.Check.
func (m *Manager) NewClientFor(name string, caller Caller) (*Client, error) {
	if err := caller.Check(); err != nil {
		return nil, err
	}
	return &Client{m: m, name: name, caller: caller}, nil
}

// Close ends every session (whole process trees) and the reaper, then returns.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	if m.reaper == nil {
		return nil
	}
	var wg sync.WaitGroup
	for _, s := range all {
		if !s.isExited() {
			wg.Go(func() { s.kill(false) })
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	m.recs.closeAll(ctx)
	return m.reaper.Close(5 * time.Second)
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

// lookup finds a session by short id, UUID or unique UUID prefix.
func (m *Manager) lookup(id string) (*Session, error) {
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

// admit makes room for one more session, pruning if at the limit, and returns warnings.
func (m *Manager) admit() ([]string, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("session: manager is closed")
	}
	n := len(m.sessions)
	var victim *Session
	if n >= m.opts.MaxSessions {
		victim = m.pruneCandidate()
		if victim == nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: %d sessions, all recently used or busy; removing one frees its place", ErrLimit, n)
		}
		delete(m.sessions, victim.id)
		n--
	}
	m.mu.Unlock()
	var warns []string
	if victim != nil {
		state := "exited"
		if !victim.isExited() {
			state = "running"
			victim.kill(false)
		}
		m.forget(victim)
		warns = append(warns, fmt.Sprintf("session limit %d reached: pruned the least recently used session %d (%s, %s)", m.opts.MaxSessions, victim.id, state, victim.command))
	}
	if n+1 >= m.opts.WarnSessions {
		warns = append(warns, fmt.Sprintf("%d of %d sessions in use; at the limit the least recently used are pruned (removing a session frees its place)", n+1, m.opts.MaxSessions))
	}
	return warns, nil
}

// pruneCandidate picks the least recently used exited session, else the least recently
// used live one, never one of the ProtectRecent most recent and never one with a call in
// flight. Called with m.mu held.
func (m *Manager) pruneCandidate() *Session {
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	last := func(s *Session) time.Time { s.mu.Lock(); defer s.mu.Unlock(); return s.lastUsed }
	sort.Slice(all, func(i, j int) bool { return last(all[i]).Before(last(all[j])) })
	if len(all) > m.opts.ProtectRecent {
		all = all[:len(all)-m.opts.ProtectRecent]
	} else {
		return nil
	}
	for _, wantExited := range []bool{true, false} {
		for _, s := range all {
			s.mu.Lock()
			busy := s.inFlight > 0
			s.mu.Unlock()
			if !busy && s.isExited() == wantExited {
				return s
			}
		}
	}
	return nil
}

// start validates req and starts a session owned by owner.
func (m *Manager) start(req *ExecRequest, owner *Client) (*Session, []string, error) {
	if (req.Cmd == "") == (len(req.Argv) == 0) {
		return nil, nil, fmt.Errorf("%w: give exactly one of cmd (a shell command line) and argv (a program and its arguments)", ErrInvalid)
	}
	profile := req.Profile
	switch profile {
	case "":
		profile = ProfileAgent
	case ProfileAgent, ProfilePlain:
	default:
		return nil, nil, fmt.Errorf("%w: profile must be agent or plain, not %q", ErrInvalid, req.Profile)
	}
	rows, cols := req.Rows, req.Cols
	if rows == 0 {
		rows = DefaultRows
	}
	if cols == 0 {
		cols = DefaultCols
	}
	if rows < 1 || rows > MaxRows || cols < 1 || cols > MaxCols {
		return nil, nil, fmt.Errorf("%w: rows and cols must be 1 to %d (got %dx%d)", ErrInvalid, MaxRows, rows, cols)
	}
	if req.TimeoutMs < 0 {
		return nil, nil, fmt.Errorf("%w: timeout_ms must be positive (got %d)", ErrInvalid, req.TimeoutMs)
	}
	if len(req.Stdin) > MaxInputBytes {
		return nil, nil, fmt.Errorf("%w: stdin is %d bytes, more than %d; write the data to a file and pass its name", ErrInvalid, len(req.Stdin), MaxInputBytes)
	}
	base, baseEnv := owner.caller.Dir, owner.caller.Env
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, nil, fmt.Errorf("session: working directory: %w", err)
		}
		base, baseEnv = wd, os.Environ()
	}
	dir, err := resolveWorkdir(base, req.Workdir)
	if err != nil {
		return nil, nil, err
	}
	id := uuid.Must(uuid.NewV7()).String()
	env, err := buildEnv(baseEnv, dir, profile, req.ClearEnv, req.Env, id)
	if err != nil {
		return nil, nil, err
	}
	tty := req.TTY == nil || *req.TTY
	var argv []string
	var command string
	if req.Cmd != "" {
		shell := req.Shell
		if shell == "" {
			shell = defaultShell(env)
		}
		flag := "-c"
		if req.Login {
			flag = "-lc"
		}
		argv = []string{shell, flag, req.Cmd}
		command = req.Cmd
	} else {
		argv = append([]string(nil), req.Argv...)
		command = strings.Join(argv, " ")
	}
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return nil, nil, fmt.Errorf("%w: the command contains a NUL byte", ErrInvalid)
		}
	}
	warns, err := m.admit()
	if err != nil {
		return nil, nil, err
	}
	if err := m.startReaper(); err != nil {
		return nil, nil, err
	}
	now := time.Now()
	s := &Session{m: m, uuid: id, command: command, tty: tty, profile: profile,
		started: now, lastUsed: now, rows: rows, cols: cols, owner: owner,
		hub: broadcast.New(m.opts.Retain), wake: make(chan struct{}, 1),
		quit: make(chan struct{}), exited: make(chan struct{}), drained: make(chan struct{})}
	m.mu.Lock()
	m.nextID++
	s.id = m.nextID
	m.sessions[s.id] = s
	m.mu.Unlock()

	path, lerr := lookPath(argv[0], getenv(env, "PATH"), dir)
	if lerr == nil {
		lerr = s.spawn(reaper.Spec{Path: path, Argv: argv, Env: env, Dir: dir, Tag: id}, rows, cols)
	}
	if lerr != nil {
		// Not found or not runnable: the session exists, exited with 127 (126 when
		// found but not executable), and says why, as a shell would.
		code := 127
		what := "command not found"
		if errors.Is(lerr, os.ErrPermission) {
			code, what = 126, "permission denied"
		} else if !errors.Is(lerr, os.ErrNotExist) {
			what = lerr.Error()
		}
		s.hub.Write([]byte(fmt.Sprintf("ptyhub: %s: %s\r\n", argv[0], what)))
		s.hub.Close()
		s.exit = pty.ExitStatus{Code: code}
		s.exitedAt = time.Now()
		close(s.drained)
		m.noteEnded(s)
		close(s.exited)
		close(s.quit)
		return s, warns, nil
	}
	if req.TimeoutMs > 0 {
		s.mu.Lock()
		s.timer = time.AfterFunc(time.Duration(req.TimeoutMs)*time.Millisecond, func() { s.kill(true) })
		s.mu.Unlock()
	}
	return s, warns, nil
}

// Client is one caller's view of a Manager; it implements Service.
type Client struct {
	m      *Manager
	name   string
	caller Caller // immutable

	mu    sync.Mutex
	ended []Ended
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
	n := Notices{EndedSinceLastCall: []Ended{}, Warnings: warns}
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
	return n
}

// Close ends the sessions this client started, unless keep is true (then they stay with
// the manager for a human to find).
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
			wg.Go(func() { s.kill(false) })
		}
	}
	wg.Wait()
	return nil
}

// endedRecord describes the session's end; the exit status must be recorded.
func (s *Session) endedRecord() Ended {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := Ended{SessionID: strconv.Itoa(s.id), Command: s.command, TimedOut: s.timedOut}
	if s.exit.Signal != 0 {
		e.Signal = s.exit.SignalName()
	} else {
		code := s.exit.Code
		e.ExitCode = &code
	}
	return e
}
