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
	// Waiting are those of SessionIDs the caller already knows wait for input: they
	// count only once seen doing something else first, then waiting again.
	Waiting []string `json:"waiting,omitempty"`
}

// WatchEvent is one session starting to wait for input.
type WatchEvent struct {
	SessionID string `json:"session_id"`
	Because   string `json:"because"`
}

// WatchResult is what Watch returns.
type WatchResult struct {
	// Generation changes whenever a session starts, ends or is removed.
	Generation uint64       `json:"generation"`
	Events     []WatchEvent `json:"events"`
	// Sessions lists every session when the generation changed (cheap: no process
	// facts), by id.
	Sessions []WatchSession `json:"sessions,omitempty"`
}

// WatchSession is a session in a WatchResult.
type WatchSession struct {
	SessionID string `json:"session_id"`
	Name      string `json:"name,omitempty"`
	Command   string `json:"command"`
	State     string `json:"state"`
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
		st := StateRunning
		if s.isExited() {
			st = StateExited
		}
		out[i] = WatchSession{SessionID: strconv.Itoa(s.id), Name: s.name, Command: s.command, State: st}
	}
	return out
}

// bumpLocked records a change of the session table or of a session's state and wakes
// Watch calls. Called with m.mu held.
func (m *Manager) bumpLocked() {
	m.gen++
	if m.genCh != nil {
		close(m.genCh)
		m.genCh = nil
	}
}

// bump is bumpLocked for a caller that does not hold m.mu.
func (m *Manager) bump() {
	m.mu.Lock()
	m.bumpLocked()
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
// for input (one in req.Waiting only after it was seen doing something else), or ctx ends
// (then it returns ctx's error). It consumes no output. Unknown or ended sessions are not watched.
func (c *Client) Watch(ctx context.Context, req WatchRequest) (*WatchResult, error) {
	gen, changed := c.m.generation()
	if gen != req.Since {
		return &WatchResult{Generation: gen, Events: []WatchEvent{}, Sessions: c.m.watchList()}, nil
	}
	var set []*Session
	known := map[*Session]bool{}
	for _, id := range req.SessionIDs {
		if s, err := c.lookup(id); err == nil && !s.isExited() && s.tty && waitDetectionAvailable {
			set = append(set, s)
		}
	}
	for _, id := range req.Waiting {
		if s, err := c.lookup(id); err == nil {
			known[s] = true
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	fired := make(chan *Session, len(set))
	var wg sync.WaitGroup
	for _, s := range set {
		// One watcher per session: owned by this call, ends when wctx ends.
		wg.Go(func() {
			ev := waitEvents{waiting: true, onlyNews: known[s], always: !known[s]}
			if s.watch(wctx, ev, nil) != "" {
				fired <- s
			}
		})
	}
	var ev []WatchEvent
	select {
	case s := <-fired:
		ev = append(ev, WatchEvent{SessionID: strconv.Itoa(s.id), Because: BecauseWaitingForInput})
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
		r.Sessions = c.m.watchList()
	}
	return r, nil
}
