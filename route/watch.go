package route

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// Watching every member: Watch runs on Local and on each member at once, each from the
// generation it last answered with, and returns at the first news. The generation the
// Router hands out stands for one generation per member (and the sessions each had
// then, so a member that goes away or stops answering has its sessions removed); it
// keeps the last watchKept of them.

// watchKept is how many generations a Router remembers; a watcher further behind gets
// the whole list again.
const watchKept = 8

// watchRetry is how soon a Watch returns, with whatever it has, after a member failed to
// answer, so that the member is asked again (a server that was not running yet).
var watchRetry = 3 * time.Second

// watchState is what a Router remembers of its watchers' generations.
type watchState struct {
	gen  uint64
	kept []watchGen // newest last
}

// watchGen is one generation handed out: each member's generation and sessions then.
type watchGen struct {
	gen uint64
	of  map[string]memberGen // by member name ("" is Local)
}

type memberGen struct {
	gen    uint64
	prefix string
	ids    idSet // its sessions' ids there
}

// idSet is a member's session ids at one generation. The generations a Router keeps
// share what they have in common: a set is a map that is never written once made (base)
// and the changes after it, newest first, in a list that later sets extend and never
// alter. So a new generation costs its changes, not the member's count of sessions (it
// is made at each start, end and removal of a session, beside all the others). The
// changes are folded into a new map once they outnumber a quarter of it, so each change
// is copied a few times on average whatever the count.
type idSet struct {
	base    map[string]bool
	changes *idChange // newest first; nil: none
	n       int       // length of changes
}

// idChange is one id added to or removed from a set (gone).
type idChange struct {
	id   string
	gone bool
	prev *idChange
}

// added returns s with the sessions of list added; s itself is unchanged. A long list
// (a member's whole list) goes straight into a new map.
func (s idSet) added(list []session.WatchSession) idSet {
	if s.n+len(list) <= len(s.base)/4+16 {
		for _, in := range list {
			s = s.with(in.SessionID, false)
		}
		return s
	}
	all := s.all()
	for _, in := range list {
		all[in.SessionID] = true
	}
	return idSet{base: all}
}

// with returns s with id added, or removed when gone; s itself is unchanged.
func (s idSet) with(id string, gone bool) idSet {
	s.changes = &idChange{id: id, gone: gone, prev: s.changes}
	if s.n++; s.n > len(s.base)/4+16 {
		return idSet{base: s.all()}
	}
	return s
}

// all returns the ids of s in a new map.
func (s idSet) all() map[string]bool {
	out := make(map[string]bool, len(s.base)+s.n)
	for id := range s.base {
		out[id] = true
	}
	changes := make([]*idChange, 0, s.n)
	for c := s.changes; c != nil; c = c.prev {
		changes = append(changes, c)
	}
	for _, c := range slices.Backward(changes) {
		if c.gone {
			delete(out, c.id)
		} else {
			out[c.id] = true
		}
	}
	return out
}

// at returns what generation since stands for (nil: none this Router handed out).
func (w *watchState) at(since uint64) map[string]memberGen {
	for _, g := range w.kept {
		if g.gen == since {
			return g.of
		}
	}
	return nil
}

// add records a new generation and returns it.
func (w *watchState) add(of map[string]memberGen) uint64 {
	w.gen++
	if len(w.kept) >= watchKept {
		w.kept = w.kept[1:]
	}
	w.kept = append(w.kept, watchGen{gen: w.gen, of: of})
	return w.gen
}

// Watch implements session.Service over Local and every member (with LocalWatch, Local
// alone). Sessions of members carry their member's name in Where and, on hosts, their
// prefix.
func (r *Router) Watch(ctx context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	all := []Member{{Name: r.LocalName, Svc: r.Local}}
	if !r.LocalWatch {
		members, _ := r.members(ctx)
		all = append(all, members...)
	}
	r.mu.Lock()
	base := r.watch.at(req.Since)
	if r.hostsMoved == nil {
		r.hostsMoved, r.moveHosts = context.WithCancel(context.Background())
	}
	moved := r.hostsMoved
	r.mu.Unlock()
	subs := make([]session.WatchRequest, len(all))
	for i, m := range all {
		subs[i].Since = ^uint64(0) // unknown: answers at once with every session
		if b, ok := base[m.Name]; ok {
			subs[i].Since = b.gen
		}
	}
	place := func(id string, f func(sub *session.WatchRequest, id string)) {
		if h, rest, ok := r.byPrefix(id); ok {
			for i, m := range all {
				if m.Prefix == h.Prefix {
					f(&subs[i], rest)
				}
			}
			return
		}
		for i, m := range all {
			if m.Prefix == "" {
				f(&subs[i], id)
			}
		}
	}
	for _, id := range req.SessionIDs {
		place(id, func(s *session.WatchRequest, id string) { s.SessionIDs = append(s.SessionIDs, id) })
	}
	for _, id := range req.Waiting {
		place(id, func(s *session.WatchRequest, id string) { s.Waiting = append(s.Waiting, id) })
	}
	for _, e := range req.Heard {
		place(e.SessionID, func(s *session.WatchRequest, id string) { e.SessionID = id; s.Heard = append(s.Heard, e) })
	}
	type answer struct {
		i   int
		res *session.WatchResult
		err error
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer, len(all))
	whole := 0 // members asked for every session: wait for them before returning
	// alone: every member but Local answered at once, so Local's Watch runs on this
	// goroutine (Local is asked last). A round (in ptyhub mcp, each start, exit and
	// removal of a session) then starts no goroutine and hands no answer over.
	alone := true
	for i := len(all) - 1; i >= 0; i-- {
		m := all[i]
		if subs[i].Since == ^uint64(0) {
			whole++
		}
		if p, ok := m.Svc.(*Peer); ok {
			if err := p.quietLook(); err != nil {
				// Its Watch would fail at once (no server to look at, remembered): its
				// answer without a goroutine of its own. answers has room for every member.
				answers <- answer{i, nil, err}
				continue
			}
		}
		if i == 0 && alone {
			// Local alone is waited for, and ends as the loop below would end it: at its
			// news, when a host is used (moved), or watchRetry after the others failed
			// (so that they are asked again).
			stop := context.AfterFunc(moved, cancel)
			var t *time.Timer
			if len(all) > 1 {
				t = time.AfterFunc(watchRetry, cancel)
			}
			res, err := m.Svc.Watch(wctx, subs[i])
			stop()
			if t != nil {
				t.Stop()
			}
			answers <- answer{i, res, err}
			continue
		}
		alone = false
		// One watch per member: owned by this call, ends when wctx does.
		go func() {
			res, err := m.Svc.Watch(wctx, subs[i])
			answers <- answer{i, res, err}
		}()
	}
	got := make([]answer, len(all))
	movedC := moved.Done()
	var retry <-chan time.Time
	news := false
	for left := len(all); left > 0; {
		select {
		case a := <-answers:
			left--
			got[a.i] = a
			if subs[a.i].Since == ^uint64(0) {
				whole--
			}
			switch {
			case a.err == nil:
				news = news || len(a.res.Events) > 0 || a.res.Generation != subs[a.i].Since
			case a.i == 0 && wctx.Err() == nil:
				return nil, a.err // Local failed
			case wctx.Err() == nil && retry == nil && !alone:
				t := time.NewTimer(watchRetry)
				defer t.Stop()
				retry = t.C
			}
			if news && whole == 0 {
				cancel()
			}
		case <-retry:
			cancel()
		case <-movedC:
			movedC = nil
			cancel()
		}
	}
	if !news {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return r.watchResult(req.Since, base, all, func(i int) (*session.WatchResult, bool) {
		a := got[i]
		if a.err != nil && errors.Is(a.err, context.Canceled) {
			return nil, true // not asked to the end: as it was
		}
		return a.res, false
	}), nil
}

// watchResult merges the members' answers (answer(i): its result, nil when it failed;
// kept: it was cancelled, nothing changed there) into one result since generation since,
// which stands for base.
func (r *Router) watchResult(since uint64, base map[string]memberGen, all []Member, answer func(int) (*session.WatchResult, bool)) *session.WatchResult {
	out := &session.WatchResult{Events: []session.WatchEvent{}, Delta: base != nil}
	now := map[string]memberGen{}
	changed := base == nil
	removed := func(prefix string, ids idSet, except []session.WatchSession) {
		for id := range ids.all() {
			if !containsSession(except, id) {
				out.Removed = append(out.Removed, withPrefix(prefix, id))
				changed = true
			}
		}
	}
	present := map[string]bool{}
	for i, m := range all {
		present[m.Name] = true
		b, had := base[m.Name]
		res, kept := answer(i)
		switch {
		case kept:
			if had {
				now[m.Name] = b
			}
			continue
		case res == nil: // failed: its sessions are out of view until it answers again
			removed(m.Prefix, b.ids, nil)
			continue
		}
		for _, e := range res.Events {
			e.SessionID = withPrefix(m.Prefix, e.SessionID)
			out.Events = append(out.Events, e)
			changed = true
		}
		ids := b.ids
		if !had || !res.Delta && res.Generation != b.gen {
			removed(m.Prefix, ids, res.Sessions) // a whole list: what it lacks was removed
			ids = idSet{}
		}
		if res.Delta {
			for _, id := range res.Removed {
				ids = ids.with(id, true)
				out.Removed = append(out.Removed, withPrefix(m.Prefix, id))
			}
		}
		ids = ids.added(res.Sessions)
		for _, s := range res.Sessions {
			s.SessionID = withPrefix(m.Prefix, s.SessionID)
			if s.Where == "" {
				s.Where = m.Name
			}
			out.Sessions = append(out.Sessions, s)
		}
		now[m.Name] = memberGen{gen: res.Generation, prefix: m.Prefix, ids: ids}
		changed = changed || !had || res.Generation != b.gen
	}
	for name, b := range base {
		if !present[name] { // a member that went away
			removed(b.prefix, b.ids, nil)
		}
	}
	if !changed {
		out.Generation = since
		return out
	}
	r.mu.Lock()
	out.Generation = r.watch.add(now)
	r.mu.Unlock()
	return out
}

func containsSession(ss []session.WatchSession, id string) bool {
	for _, s := range ss {
		if s.SessionID == id {
			return true
		}
	}
	return false
}
