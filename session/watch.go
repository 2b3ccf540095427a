package session

import (
	"context"
	"sort"
	"strconv"
	"sync"
)

// Watching the manager: what an interface that tells its clients about changes (MCP
// resource notifications) needs without polling.

// WatchRequest is the input of Service.Watch.
type WatchRequest struct {
	// Since is the generation the caller last saw (0 at first).
	Since uint64 `json:"since"`
	// SessionIDs are watched for waiting for input.
	SessionIDs []string `json:"session_ids,omitempty"`
	// Heard are events the caller was already told (from earlier results): such a
	// session counts again only once it printed or was typed into since, or was seen
	// doing something else, and waits again.
	Heard []WatchEvent `json:"heard,omitempty"`
	// Waiting are ids treated as heard at the state they are in when the watch begins
	// (for clients that keep no events).
	Waiting []string `json:"waiting,omitempty"`
}

// WatchEvent is one session starting to wait for input.
type WatchEvent struct {
	SessionID string `json:"session_id"`
	Because   string `json:"because"`
	// Output and Input mark the session's state when it was seen waiting: the end offset
	// of its output and the count of inputs written to it. Passed back in
	// WatchRequest.Heard.
	Output int64 `json:"output"`
	Input  int64 `json:"input"`
}

// watchMark is a session's output end and input count at one moment: a watch of a
// session the caller already heard waiting fires only after the mark moved.
type watchMark struct{ output, input int64 }

func (s *Session) markNow() watchMark {
	return watchMark{output: s.hub.End(), input: s.typed.Load()}
}

// WatchResult is what Watch returns.
type WatchResult struct {
	// Generation changes whenever a session starts, ends or is removed.
	Generation uint64       `json:"generation"`
	Events     []WatchEvent `json:"events"`
	// Sessions lists the sessions when the generation changed (cheap: no process
	// facts), by id: every session, or with Delta only those that started or changed
	// state since the generation asked for.
	Sessions []WatchSession `json:"sessions,omitempty"`
	// Delta says Sessions and Removed are the changes since the generation asked for;
	// without it Sessions is the whole list. Removed lists the ids removed since then.
	Delta   bool     `json:"delta,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// WatchSession is a session in a WatchResult.
type WatchSession struct {
	SessionID string `json:"session_id"`
	Name      string `json:"name,omitempty"`
	Command   string `json:"command"`
	State     string `json:"state"`
	// Where names the process or host it runs in, when not the one asked (a router's
	// member: "the ptyhub server", "host ssh://box").
	Where string `json:"where,omitempty"`
}

// watchChange is one entry of the manager's change log: the session (by id, so the log
// keeps no removed session alive) that started, changed state or left the table at
// generation gen. A session no longer in the table at Watch time was removed.
type watchChange struct {
	gen uint64
	id  int
}

// watchLogMax bounds the change log; a watcher further behind gets the whole list.
const watchLogMax = 4096

// watchDelta returns the sessions changed and the ids removed after generation since,
// and false when the log no longer reaches back that far (or since is not a generation
// of this manager). Each is listed once, with its state now. Costs O(changes), not
// O(sessions): a watcher of a server with a thousand sessions is told about one.
func (m *Manager) watchDelta(since uint64) (changed []WatchSession, removed []string, ok bool) {
	m.mu.Lock()
	if since > m.gen || len(m.changes) == 0 || m.changes[0].gen > since+1 {
		m.mu.Unlock()
		return nil, nil, false
	}
	var ss []*Session
	seen := map[int]bool{}
	for _, c := range m.changes[since+1-m.changes[0].gen:] {
		if seen[c.id] {
			continue
		}
		seen[c.id] = true
		if s, ok := m.sessions[c.id]; ok {
			ss = append(ss, s)
		} else {
			removed = append(removed, strconv.Itoa(c.id))
		}
	}
	m.mu.Unlock()
	sort.Slice(ss, func(i, j int) bool { return ss[i].id < ss[j].id })
	for _, s := range ss {
		changed = append(changed, s.watchSession())
	}
	return changed, removed, true
}

// watchSession describes s for a WatchResult.
func (s *Session) watchSession() WatchSession {
	st := StateRunning
	if s.isExited() {
		st = StateExited
	}
	return WatchSession{SessionID: strconv.Itoa(s.id), Name: s.name, Command: s.command, State: st}
}

// watchResultSessions fills r's sessions for a watcher that last saw generation since:
// the changes when the log reaches back that far, else every session.
func (m *Manager) watchResultSessions(r *WatchResult, since uint64) {
	if changed, removed, ok := m.watchDelta(since); ok {
		r.Sessions, r.Removed, r.Delta = changed, removed, true
		return
	}
	r.Sessions = m.watchList()
}

// watchList lists the manager's sessions by id, state only.
func (m *Manager) watchList() []WatchSession {
	m.mu.Lock()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	out := make([]WatchSession, len(all))
	for i, s := range all {
		out[i] = s.watchSession()
	}
	return out
}

// bumpLocked records a change of the session table or of s's state in the change log
// and wakes Watch calls. Called with m.mu held.
func (m *Manager) bumpLocked(s *Session) {
	m.gen++
	if len(m.changes) >= watchLogMax {
		m.changes = append(m.changes[:0], m.changes[watchLogMax/2:]...)
	}
	m.changes = append(m.changes, watchChange{gen: m.gen, id: s.id})
	if m.genCh != nil {
		close(m.genCh)
		m.genCh = nil
	}
}

// bump is bumpLocked for a caller that does not hold m.mu.
func (m *Manager) bump(s *Session) {
	m.mu.Lock()
	m.bumpLocked(s)
	m.mu.Unlock()
}

// generation returns the current generation and a channel closed at the next change.
func (m *Manager) generation() (uint64, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.genCh == nil {
		m.genCh = make(chan struct{})
	}
	return m.gen, m.genCh
}

// Watch blocks until the manager's generation differs from req.Since (a session
// started, ended or was removed: List tells which), or one of the watched sessions waits
// for input (one in req.Heard or req.Waiting only with news since), or ctx ends
// (then it returns ctx's error). It consumes no output. Unknown or ended sessions are not watched.
func (c *Client) Watch(ctx context.Context, req WatchRequest) (*WatchResult, error) {
	if err := req.CheckSizes(); err != nil {
		return nil, err
	}
	gen, changed := c.m.generation()
	if gen != req.Since {
		r := &WatchResult{Generation: gen, Events: []WatchEvent{}}
		c.m.watchResultSessions(r, req.Since)
		return r, nil
	}
	var set []*Session
	for _, id := range req.SessionIDs {
		if s, err := c.lookup(id); err == nil && !s.isExited() && s.tty && waitDetectionAvailable {
			set = append(set, s)
		}
	}
	if len(set) == 0 {
		// Nothing to watch for input: only the generation (the common case, between
		// the changes of an agent's sessions), with no watcher and no context of its own.
		select {
		case <-changed:
		case <-ctx.Done():
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := &WatchResult{Events: []WatchEvent{}}
		if r.Generation, _ = c.m.generation(); r.Generation != req.Since {
			c.m.watchResultSessions(r, req.Since)
		}
		return r, nil
	}
	heard := map[*Session]watchMark{}
	for _, id := range req.Waiting {
		if s, err := c.lookup(id); err == nil {
			heard[s] = s.markNow()
		}
	}
	for _, e := range req.Heard {
		if s, err := c.lookup(e.SessionID); err == nil {
			heard[s] = watchMark{output: e.Output, input: e.Input}
		}
	}
	type firing struct {
		s    *Session
		mark watchMark
	}
	wctx, cancel := context.WithCancel(ctx)
	fired := make(chan firing, len(set))
	var wg sync.WaitGroup
	for _, s := range set {
		// One watcher per session: owned by this call, ends when wctx ends.
		wg.Go(func() {
			ev := waitEvents{waiting: true, always: true, mark: new(watchMark)}
			if m, ok := heard[s]; ok {
				ev.always, ev.heard = false, &m
			}
			if s.watch(wctx, ev, nil) != "" {
				fired <- firing{s, *ev.mark}
			}
		})
	}
	var ev []WatchEvent
	select {
	case f := <-fired:
		ev = append(ev, WatchEvent{SessionID: strconv.Itoa(f.s.id), Because: BecauseWaitingForInput, Output: f.mark.output, Input: f.mark.input})
	case <-changed:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	if ev == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ev = []WatchEvent{}
	}
	r := &WatchResult{Events: ev}
	if r.Generation, _ = c.m.generation(); r.Generation != req.Since {
		c.m.watchResultSessions(r, req.Since)
	}
	return r, nil
}
