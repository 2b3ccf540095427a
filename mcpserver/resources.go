package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/session"
)

// Sessions as MCP resources. Each session is the resource ptyhub://session/ID: reading
// it returns its text view (escapes removed) and, for terminal sessions, its screen as a
// second content (ptyhub://session/ID/screen, also readable alone). The list follows the
// sessions (notifications/resources/list_changed when they come and go); a subscriber of
// a session (or of its screen) gets notifications/resources/updated when it exits or
// starts waiting for input: at least once for an exit, even one that happened before
// the subscription was recorded (see subscribed). The service's Watch says when anything
// changed, so nothing here polls.

const (
	uriPrefix    = "ptyhub://session/"
	screenSuffix = "/screen"
)

func sessionURI(id string) string { return uriPrefix + id }

// sessionOf returns the session id of a resource URI and whether it names the screen.
func sessionOf(uri string) (id string, screen, ok bool) {
	rest, ok := strings.CutPrefix(uri, uriPrefix)
	if !ok || rest == "" {
		return "", false, false
	}
	if r, found := strings.CutSuffix(rest, screenSuffix); found {
		return r, true, r != ""
	}
	// An id may hold slashes: a session on a host reads HOST:ID (ssh://box:4).
	return rest, false, true
}

// resources keeps the MCP resource list in step with the sessions of one service.
type resources struct {
	s *Server

	mu     sync.Mutex
	subs   map[string]bool               // subscribed session ids
	states map[string]string             // listed session id → its last known state
	heard  map[string]session.WatchEvent // sessions whose subscribers heard they wait for input
	// stopWatch cancels the context of run's Watch in flight (nil: none); poke calls it
	// when the subscriptions change, and kicked tells run they did.
	stopWatch context.CancelFunc
	kicked    bool
}

func newResources(s *Server) *resources {
	return &resources{s: s, subs: map[string]bool{}, states: map[string]string{}, heard: map[string]session.WatchEvent{}}
}

// poke tells run that the subscriptions changed: its Watch in flight is cancelled, and
// the next one asks for the new set.
func (r *resources) poke() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kicked = true
	if r.stopWatch != nil {
		r.stopWatch()
	}
}

// subscribe and unsubscribe are the SDK's handlers: they record which sessions the
// client wants to hear about.
func (r *resources) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	id, _, ok := sessionOf(req.Params.URI)
	if !ok {
		return fmt.Errorf("unknown resource %q: session resources are %sID", req.Params.URI, uriPrefix)
	}
	r.mu.Lock()
	r.subs[id] = true
	r.mu.Unlock()
	r.poke()
	return nil
}

func (r *resources) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if id, _, ok := sessionOf(req.Params.URI); ok {
		r.mu.Lock()
		delete(r.subs, id)
		r.mu.Unlock()
		r.poke()
	}
	return nil
}

// run follows the service until ctx ends: one Watch call at a time, restarted when the
// subscriptions change. Owned by Serve; stops with its context. The Watch calls share
// one context until a change of the subscriptions cancels it: a round (each start, exit
// and removal of a session) starts no goroutine and makes no context of its own.
func (r *resources) run(ctx context.Context) {
	var gen uint64
	first := true
	var wctx context.Context
	var cancel context.CancelFunc
	defer func() {
		r.mu.Lock()
		r.stopWatch = nil
		r.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}()
	for ctx.Err() == nil {
		r.mu.Lock()
		if wctx == nil || wctx.Err() != nil || r.kicked {
			if cancel != nil {
				cancel()
			}
			wctx, cancel = context.WithCancel(ctx)
			r.stopWatch, r.kicked = cancel, false
		}
		var ids []string
		var heard []session.WatchEvent
		for id := range r.subs {
			if r.states[id] == session.StateRunning {
				ids = append(ids, id)
				if e, ok := r.heard[id]; ok {
					heard = append(heard, e)
				}
			}
		}
		r.mu.Unlock()
		since := gen
		if first {
			since = ^uint64(0) // answers at once with the current generation
		}
		res, err := r.s.svc.Watch(wctx, session.WatchRequest{Since: since, SessionIDs: ids, Heard: heard})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if errors.Is(err, context.Canceled) {
				continue // the subscriptions changed
			}
			r.s.log.Warn("mcp: watching sessions", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for _, ev := range res.Events {
			r.mu.Lock()
			r.heard[ev.SessionID] = ev
			r.mu.Unlock()
			r.updated(ctx, ev.SessionID)
		}
		if res.Generation != gen || first {
			gen, first = res.Generation, false
			r.sync(ctx, res)
		}
	}
}

// sync follows the sessions: new ones become resources, removed ones stop being
// resources, and subscribers hear of those that ended. res lists every session, or
// with Delta only the changes.
func (r *resources) sync(ctx context.Context, res *session.WatchResult) {
	seen := map[string]bool{}
	var ended []string
	var added []session.WatchSession
	r.mu.Lock()
	for _, in := range res.Sessions {
		seen[in.SessionID] = true
		old, ok := r.states[in.SessionID]
		if !ok {
			added = append(added, in)
		}
		// One first seen already ended (it started and ended between two rounds) ended
		// too: a client that subscribed to it from its exec's result hears of it.
		if (!ok || old == session.StateRunning) && in.State != session.StateRunning {
			ended = append(ended, in.SessionID)
		}
		r.states[in.SessionID] = in.State
	}
	var gone []string
	drop := func(id string) {
		if _, ok := r.states[id]; ok {
			gone = append(gone, sessionURI(id))
		}
		delete(r.states, id)
		delete(r.subs, id)
		delete(r.heard, id)
	}
	if res.Delta {
		for _, id := range res.Removed {
			drop(id)
		}
	} else {
		for id := range r.states {
			if !seen[id] {
				drop(id)
			}
		}
	}
	r.mu.Unlock()
	for _, in := range added {
		title := in.Command
		if in.Name != "" {
			title = in.Name + ": " + in.Command
		}
		whose := "this agent"
		if in.Where != "" {
			whose = in.Where
		}
		r.s.mcp.AddResource(&mcp.Resource{
			URI: sessionURI(in.SessionID), Name: "session-" + in.SessionID, Title: oneLineTitle(title),
			MIMEType:    "text/plain",
			Description: "Output of session " + in.SessionID + ", run by " + whose + " (text view; its screen is " + sessionURI(in.SessionID) + screenSuffix + ")",
		}, r.read)
	}
	if len(gone) > 0 {
		r.s.mcp.RemoveResources(gone...)
	}
	for _, id := range ended {
		r.updated(ctx, id)
	}
}

// updated sends notifications/resources/updated for session id: to the subscribers of
// its resource and to those of its screen (the SDK sends each only to the clients that
// subscribed to that URI).
func (r *resources) updated(ctx context.Context, id string) {
	r.s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: sessionURI(id)})
	r.s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: sessionURI(id) + screenSuffix})
}

// subscribed runs once the SDK recorded a subscription to uri (afterSubscribe, after
// subscribe and the SDK's own bookkeeping). The SDK records it only after subscribe
// returned, so an end run told in between reached no one: a session already known to
// have ended is told now (a client may so hear of one end twice, never of none).
func (r *resources) subscribed(ctx context.Context, uri string) {
	id, _, ok := sessionOf(uri)
	if !ok {
		return
	}
	r.mu.Lock()
	st, known := r.states[id]
	r.mu.Unlock()
	if known && st != session.StateRunning {
		r.s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}

// afterSubscribe is a receiving middleware: after a resources/subscribe the SDK
// accepted (the protocol before 2026-07-28), it calls resources.subscribed.
func (s *Server) afterSubscribe(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if sr, ok := req.(*mcp.SubscribeRequest); ok && err == nil && method == "resources/subscribe" && sr.Params != nil {
			s.res.subscribed(ctx, sr.Params.URI)
		}
		return res, err
	}
}

// afterListen is a sending middleware: once the SDK acknowledged a subscriptions/listen
// (the protocol from 2026-07-28 on, where the listen call lasts as long as its
// subscriptions), it has recorded them, and it calls resources.subscribed for each.
func (s *Server) afterListen(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && err == nil && p != nil {
			for _, uri := range p.Notifications.ResourceSubscriptions {
				s.res.subscribed(ctx, uri)
			}
		}
		return res, err
	}
}

func oneLineTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	return s
}

// read serves resources/read of a session (text view, then its screen) or of its screen.
func (r *resources) read(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, screenOnly, ok := sessionOf(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var out []*mcp.ResourceContents
	if !screenOnly {
		res, err := r.s.svc.Read(ctx, session.ReadRequest{SessionID: id})
		if err != nil {
			if errors.Is(err, session.ErrNotFound) {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return nil, err
		}
		out = append(out, &mcp.ResourceContents{URI: sessionURI(id), MIMEType: "text/plain", Text: res.Output})
	}
	scr, err := r.s.svc.Read(ctx, session.ReadRequest{SessionID: id, View: "screen"})
	switch {
	case err == nil && scr.Screen != nil:
		out = append(out, &mcp.ResourceContents{URI: sessionURI(id) + screenSuffix, MIMEType: "text/plain",
			Text: strings.Join(scr.Screen.Rows, "\n")})
	case screenOnly && errors.Is(err, session.ErrNotFound):
		return nil, mcp.ResourceNotFoundError(uri)
	case screenOnly && err != nil:
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: out}, nil
}
