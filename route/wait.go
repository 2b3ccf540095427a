package route

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptyhub/ptyhub/session"
)

// waitTarget is one service a wait runs on, with the sessions to wait on there.
type waitTarget struct {
	name   string // in errors and warnings ("host box", "this process")
	prefix string // put back on the result's ids
	svc    session.Service
	ids    []string // none: the service's default set
}

// Wait implements session.Service. Without ids it waits on the default sets of Local
// and of every host used; otherwise each id's service is found (a host's by its prefix,
// else Local or the unprefixed member that has it) and the sessions are waited on in
// their services at once. The first event wins: the other waits are cancelled, and one
// that had an event too is reported in a warning with its output, so none is lost.
func (r *Router) Wait(ctx context.Context, req session.WaitRequest) (*session.WaitResult, error) {
	var targets []*waitTarget
	add := func(name, prefix string, svc session.Service, id string) {
		var t *waitTarget
		for _, o := range targets {
			if o.svc == svc {
				t = o
			}
		}
		if t == nil {
			t = &waitTarget{name: name, prefix: prefix, svc: svc}
			targets = append(targets, t)
		}
		if id != "" {
			t.ids = append(t.ids, id)
		}
	}
	if len(req.SessionIDs) == 0 {
		add("this process", "", r.Local, "")
		if r.Host != nil {
			members, _ := r.members(ctx)
			for _, m := range members {
				if m.Prefix != "" {
					add(m.Name, m.Prefix, m.Svc, "")
				}
			}
		}
	}
	var unplaced []string
	for _, id := range req.SessionIDs {
		if m, rest, ok := r.byPrefix(id); ok {
			add(m.Name, m.Prefix, m.Svc, rest)
		} else {
			unplaced = append(unplaced, id)
		}
	}
	if len(unplaced) > 0 {
		// Local first: when it has them all, nobody else is asked.
		sub := req
		sub.SessionIDs = unplaced
		if len(targets) == 0 {
			res, err := r.Local.Wait(ctx, sub)
			if !errors.Is(err, session.ErrNotFound) || r.Members == nil {
				if res != nil {
					r.drain(&res.Notices)
				}
				return res, err
			}
		}
		members, _ := r.members(ctx)
		all := []Member{{Name: "this process", Svc: r.Local}}
		for _, m := range members {
			if m.Prefix == "" {
				all = append(all, m)
			}
		}
		for _, id := range unplaced {
			m, err := locate(ctx, all, id)
			if err != nil {
				return nil, err
			}
			if m == nil {
				return nil, fmt.Errorf("%w %s: no such session", session.ErrNotFound, id)
			}
			add(m.Name, "", m.Svc, id)
		}
	}
	if len(targets) == 1 {
		r.refresh(targets[0].prefix)
	}
	res, err := waitFirst(ctx, req, targets)
	if res != nil {
		r.drain(&res.Notices)
	}
	return res, err
}

// waitFirst runs req on every target at once (each with its own ids) and returns the
// first event: the other waits are cancelled, and one that had an event too is reported
// in a warning with its output, so no output is lost; the other sessions' lines and
// ended notices of every target are merged. A target that failed is a warning once
// another had an event, else its error is returned (joined with the others'). One
// target is simply waited on.
func waitFirst(ctx context.Context, req session.WaitRequest, targets []*waitTarget) (*session.WaitResult, error) {
	call := func(ctx context.Context, t *waitTarget) (*session.WaitResult, error) {
		sub := req
		sub.SessionIDs = t.ids
		res, err := t.svc.Wait(ctx, sub)
		if res != nil && t.prefix != "" {
			res.SessionID = withPrefix(t.prefix, res.SessionID)
			prefixNotices(t.prefix, &res.Notices)
			for i := range res.Others {
				res.Others[i].SessionID = withPrefix(t.prefix, res.Others[i].SessionID)
			}
		}
		return res, err
	}
	if len(targets) == 1 {
		return call(ctx, targets[0])
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		t   *waitTarget
		r   *session.WaitResult
		err error
	}
	answers := make(chan answer, len(targets))
	for _, t := range targets {
		// One wait per target: owned by this call, ends when it returns or wctx ends.
		go func() {
			res, err := call(wctx, t)
			answers <- answer{t, res, err}
		}()
	}
	var win *session.WaitResult
	var rest []answer
	for range targets {
		a := <-answers
		if a.err == nil && a.r.SessionID != "" && win == nil {
			win = a.r
			cancel()
			continue
		}
		rest = append(rest, a)
	}
	var errs []error
	for _, a := range rest {
		switch {
		case a.err != nil:
			if win == nil || !errors.Is(a.err, context.Canceled) {
				errs = append(errs, fmt.Errorf("%s: %w", a.t.name, a.err))
			}
		case win == nil:
			win = a.r
		case win.SessionID == "" && win.ReturnedBecause == session.BecauseNoSessions && a.r.SessionID == "" && a.r.ReturnedBecause != session.BecauseNoSessions:
			// A target that had sessions to wait on says more than one that had none.
			a.r.Others = append(a.r.Others, win.Others...)
			a.r.EndedSinceLastCall = append(a.r.EndedSinceLastCall, win.EndedSinceLastCall...)
			win = a.r
		case a.r.SessionID != "":
			win.AddWarning(fmt.Sprintf("session %s also returned (%s) with this output:\n%s", a.r.SessionID, a.r.ReturnedBecause, a.r.Output))
			win.Others = append(win.Others, a.r.Others...)
			win.EndedSinceLastCall = append(win.EndedSinceLastCall, a.r.EndedSinceLastCall...)
		default:
			win.Others = append(win.Others, a.r.Others...)
			win.EndedSinceLastCall = append(win.EndedSinceLastCall, a.r.EndedSinceLastCall...)
		}
	}
	if win == nil {
		return nil, errors.Join(errs...)
	}
	for _, e := range errs {
		win.AddWarning(e.Error())
	}
	return win, nil
}
