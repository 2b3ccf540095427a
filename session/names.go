package session

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Names. A session may be started with a name (ExecRequest.Name). Names belong to the
// pool the session counts in (each MCP client has its own, the CLI shares one), so two
// agents may both run a "dev" server, and an Exec naming a session of its pool that still
// runs returns that session instead of starting a duplicate. Wherever an id goes, a name
// does too: the caller's own pool first, then a name that only one session of the
// manager has.

// MaxNameLen bounds a session name.
const MaxNameLen = 64

// checkName validates a session name: printable, no spaces, not all digits (an id).
func checkName(name string) error {
	if name == "" {
		return nil
	}
	if len(name) > MaxNameLen {
		return argError("name", fmt.Sprintf(" is %d bytes, more than %d", len(name), MaxNameLen))
	}
	digits := true
	for _, r := range name {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || r == ':' {
			return argError("name", fmt.Sprintf(" %q must be printable, without spaces or ':'", name))
		}
		if r < '0' || r > '9' {
			digits = false
		}
	}
	if digits {
		return argError("name", fmt.Sprintf(" %q is all digits and would read as a session id", name))
	}
	return nil
}

// nameOf returns the session's name ("" when it has none).
func (s *Session) nameOf() string { return s.name }

// named finds the session called name: first among pool's sessions (a running one
// before ended ones, then the newest), else the one session of the manager with that
// name. It returns nil when there is none, and an error when the name is ambiguous
// outside the pool.
func (m *Manager) named(pool, name string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *Session
	better := func(a, b *Session) bool { // a is a better match than b
		if b == nil {
			return true
		}
		if ar, br := !a.isExited(), !b.isExited(); ar != br {
			return ar
		}
		return a.id > b.id
	}
	for _, s := range m.pools[pool] {
		if s.name == name && better(s, best) {
			best = s
		}
	}
	if best != nil {
		return best, nil
	}
	var found []*Session
	for _, s := range m.sessions {
		if s.name == name && !s.isExited() {
			found = append(found, s)
		}
	}
	if len(found) == 0 {
		for _, s := range m.sessions {
			if s.name == name {
				found = append(found, s)
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%w: %d sessions of other clients are named %q; use a session id", ErrInvalid, len(found), name)
}

// newestNamed returns the session of any pool called name — a running one before ended
// ones, then the newest — or nil when none is (or name cannot be a name).
func (m *Manager) newestNamed(name string) *Session {
	name = strings.TrimSpace(name)
	if checkName(name) != nil || name == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *Session
	for _, s := range m.sessions {
		if s.name != name {
			continue
		}
		if best == nil || !s.isExited() && best.isExited() || s.isExited() == best.isExited() && s.id > best.id {
			best = s
		}
	}
	return best
}

// lookup finds a session by short id, UUID, unique UUID prefix, or name (see named).
func (c *Client) lookup(id string) (*Session, error) { return c.m.lookupIn(c.pool, id) }

// lookupIn finds a session by name as seen from pool (see named), else by short id,
// UUID or unique UUID prefix. A session being started is returned once its start has
// finished (waitSpawned).
func (m *Manager) lookupIn(pool, id string) (*Session, error) {
	s, err := m.lookupSpawning(pool, id)
	if s != nil {
		s.waitSpawned()
	}
	return s, err
}

// lookupSpawning is lookupIn without the wait for a start.
func (m *Manager) lookupSpawning(pool, id string) (*Session, error) {
	id = strings.TrimSpace(id)
	if id != "" && checkName(id) == nil {
		s, err := m.named(pool, id)
		if err != nil {
			return nil, err
		}
		if s != nil {
			return s, nil
		}
	}
	return m.lookupID(id)
}

// nameTaken is start's answer when a running session of the pool has the name asked for.
type nameTaken struct{ s *Session }

func (e *nameTaken) Error() string { return fmt.Sprintf("session %d has that name", e.s.id) }

// runningNamed returns the running session of c's pool called name, if there is one.
func (c *Client) runningNamed(name string) *Session {
	if name == "" {
		return nil
	}
	s, _ := c.m.named(c.pool, name)
	if s == nil || s.isExited() || s.pool != c.pool {
		return nil
	}
	return s
}

// execExisting is Exec's answer when a session of that name already runs: that session,
// with a notice saying so, collected as the Exec would have collected a new one — its
// new output until it exits, waits for input, matches re, or the yield passes. A pattern
// this session's output already matched in an earlier call counts at once (so "start the
// dev server unless it runs, and wait until it is ready" holds on every call): the call
// then returns its new output without waiting, because "pattern".
func (c *Client) execExisting(ctx context.Context, s *Session, req *ExecRequest, t0 time.Time, yield time.Duration, re *regexp.Regexp) *Result {
	budget, bwarn := tokenBudget(req.MaxOutputTokens)
	warns := appendNonEmpty(nil, bwarn)
	cmd := req.Cmd
	if cmd == "" {
		cmd = strings.Join(req.Argv, " ")
	}
	note := fmt.Sprintf("a session named %q is already running (session %d: %s); returned it instead of starting another", req.Name, s.id, s.command)
	if cmd != s.command {
		note += fmt.Sprintf("; %q was not started (kill the session first to replace it)", cmd)
	}
	warns = append(warns, note)
	s.waitSpawned() // another call may be starting it now
	s.begin()
	defer s.end()
	deadline := t0.Add(yield)
	already := re != nil && s.hasMatched(re.String())
	if already {
		deadline = t0
	}
	col := s.collect(ctx, collectOpts{deadline: deadline, budget: budget, pattern: re})
	if already && col.because == BecauseDeadline {
		col.because = BecausePattern
		warns = append(warns, fmt.Sprintf("its output already matched %q before this call", re.String()))
	}
	r := c.result(s, t0, col, warns)
	r.Existing = true
	r.Profile = s.profile
	return r
}

// maxMatchedPatterns bounds the patterns a session remembers having matched.
const maxMatchedPatterns = 16

// noteMatched records that the session's output matched the pattern src.
func (s *Session) noteMatched(src string) {
	s.matchMu.Lock()
	defer s.matchMu.Unlock()
	if i := slices.Index(s.matchedPatterns, src); i >= 0 {
		s.matchedPatterns = slices.Delete(s.matchedPatterns, i, i+1)
	}
	if len(s.matchedPatterns) == maxMatchedPatterns {
		s.matchedPatterns = slices.Delete(s.matchedPatterns, 0, 1)
	}
	s.matchedPatterns = append(s.matchedPatterns, src)
}

// hasMatched reports whether the session's output matched the pattern src in an earlier
// collect.
func (s *Session) hasMatched(src string) bool {
	s.matchMu.Lock()
	defer s.matchMu.Unlock()
	return slices.Contains(s.matchedPatterns, src)
}
