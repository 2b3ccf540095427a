package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/ptyhub/ptyhub/session"
)

// Federation is a session.Service over sessions of this process (Local) and of other
// processes of the same user (what Others returns): the server's connections see the
// sessions of every ptyhub mcp that hosts its own (hostSet), and a ptyhub mcp that hosts
// its own sees the server's (and through it every other host's). New sessions start in
// Local. A call naming a session Local does not have goes to the one other service that
// has it; a listing is Local's followed by the others' (a session listed twice, by UUID,
// once). Nothing is asked of the others while Local has the session named, so a call
// about one of its own sessions costs what a call to Local costs.
type Federation struct {
	Local session.Service
	// Others returns the other services, and warnings about those that cannot be reached.
	Others func(ctx context.Context) ([]Member, []string)
}

// Member is a service of a Federation other than Local.
type Member struct {
	// Name names it in warnings and errors ("ptyhub mcp (pid 12)", "the ptyhub server").
	Name string
	Svc  session.Service
}

var _ session.Service = (*Federation)(nil)

// Exec implements session.Service: the session starts in Local.
func (f *Federation) Exec(ctx context.Context, req session.ExecRequest) (*session.Result, error) {
	return f.Local.Exec(ctx, req)
}

// Watch implements session.Service for Local's sessions.
func (f *Federation) Watch(ctx context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	return f.Local.Watch(ctx, req)
}

// routed calls call on Local, and when Local has no session id, on the other service
// that has it.
func routed[Req, Res any](f *Federation, ctx context.Context, id string, req Req, call func(session.Service, context.Context, Req) (Res, error)) (Res, error) {
	r, err := call(f.Local, ctx, req)
	if !errors.Is(err, session.ErrNotFound) || f.Others == nil {
		return r, err
	}
	members, _ := f.Others(ctx)
	m, lerr := locate(ctx, members, id)
	if lerr != nil {
		var zero Res
		return zero, lerr
	}
	if m == nil {
		return r, err
	}
	return call(m.Svc, ctx, req)
}

// AskHuman implements session.Asker.
func (f *Federation) AskHuman(ctx context.Context, req session.AskRequest) (*session.AskResult, error) {
	return routed(f, ctx, req.SessionID, req, askHuman)
}

// askHuman asks svc for a person, when it can.
func askHuman(svc session.Service, ctx context.Context, req session.AskRequest) (*session.AskResult, error) {
	a, ok := svc.(session.Asker)
	if !ok {
		return nil, fmt.Errorf("%w: this ptyhub cannot ask for a person", session.ErrInvalid)
	}
	return a.AskHuman(ctx, req)
}

// Write implements session.Service.
func (f *Federation) Write(ctx context.Context, req session.WriteRequest) (*session.Result, error) {
	return routed(f, ctx, req.SessionID, req, session.Service.Write)
}

// Read implements session.Service.
func (f *Federation) Read(ctx context.Context, req session.ReadRequest) (*session.Result, error) {
	return routed(f, ctx, req.SessionID, req, session.Service.Read)
}

// Kill implements session.Service.
func (f *Federation) Kill(ctx context.Context, req session.KillRequest) (*session.KillResult, error) {
	return routed(f, ctx, req.SessionID, req, session.Service.Kill)
}

// Resize implements session.Service.
func (f *Federation) Resize(ctx context.Context, req session.ResizeRequest) (*session.ResizeResult, error) {
	return routed(f, ctx, req.SessionID, req, session.Service.Resize)
}

// Wait implements session.Service. Without ids it waits on Local's default set. When
// Local lacks some of the ids, each id's service is found and the sessions are waited on
// in their services at once; the first event wins (session.WaitFirst).
func (f *Federation) Wait(ctx context.Context, req session.WaitRequest) (*session.WaitResult, error) {
	r, err := f.Local.Wait(ctx, req)
	if !errors.Is(err, session.ErrNotFound) || len(req.SessionIDs) == 0 || f.Others == nil {
		return r, err
	}
	members, _ := f.Others(ctx)
	all := append([]Member{{Name: "this process", Svc: f.Local}}, members...)
	var targets []session.WaitTarget
	index := map[session.Service]int{}
	for _, id := range req.SessionIDs {
		m, lerr := locate(ctx, all, id)
		if lerr != nil {
			return nil, lerr
		}
		if m == nil {
			return nil, fmt.Errorf("%w %s: no such session", session.ErrNotFound, id)
		}
		i, ok := index[m.Svc]
		if !ok {
			i = len(targets)
			index[m.Svc] = i
			targets = append(targets, session.WaitTarget{Name: m.Name, Svc: m.Svc})
		}
		targets[i].IDs = append(targets[i].IDs, id)
	}
	return session.WaitFirst(ctx, req, targets)
}

// List implements session.Service: Local's sessions and the others' (asked at once, each
// within hostCallTimeout), sorted by id; one that cannot answer is a warning.
func (f *Federation) List(ctx context.Context) (*session.ListResult, error) {
	if f.Others == nil {
		return f.Local.List(ctx)
	}
	members, warns := f.Others(ctx)
	var answers []listAnswer
	done := make(chan struct{})
	go func() { answers = listEach(ctx, members); close(done) }() // owned by this call
	res, err := f.Local.List(ctx)
	<-done
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, in := range res.Sessions {
		seen[in.UUID] = true
	}
	for _, w := range warns {
		res.AddWarning(w)
	}
	for i, a := range answers {
		if a.err != nil {
			res.AddWarning(fmt.Sprintf("%s: %v", members[i].Name, a.err))
			continue
		}
		for _, in := range a.r.Sessions {
			if !seen[in.UUID] {
				seen[in.UUID] = true
				res.Sessions = append(res.Sessions, in)
			}
		}
		for _, w := range a.r.Warnings {
			res.AddWarning(fmt.Sprintf("%s: %s", members[i].Name, w))
		}
	}
	sort.SliceStable(res.Sessions, func(i, j int) bool {
		a, _ := strconv.Atoi(res.Sessions[i].SessionID)
		b, _ := strconv.Atoi(res.Sessions[j].SessionID)
		return a < b
	})
	return res, nil
}

// listAnswer is one member's listing, or why it has none.
type listAnswer struct {
	r   *session.ListResult
	err error
}

// listEach lists every member at once, each within hostCallTimeout.
func listEach(ctx context.Context, members []Member) []listAnswer {
	answers := make([]listAnswer, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, hostCallTimeout)
			defer cancel()
			r, err := m.Svc.List(lctx)
			answers[i] = listAnswer{r, err}
		})
	}
	wg.Wait()
	return answers
}
