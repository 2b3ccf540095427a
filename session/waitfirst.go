package session

import (
	"context"
	"errors"
	"fmt"
)

// WaitTarget is one service a WaitFirst waits on, with the sessions to wait on there.
type WaitTarget struct {
	// Name names the service in errors and warnings ("host box", "this machine").
	Name string
	Svc  Service
	// IDs are the sessions to wait on there (none: the service's default set).
	IDs []string
	// Fix, when set, adjusts the service's result (its ids, say) before it is used.
	Fix func(*WaitResult)
}

// WaitFirst runs req on every target at once (each with its own IDs) and returns the
// first event: the other waits are cancelled, and one that had an event too is reported
// in a warning with its output, so no output is lost; the other sessions' lines and
// ended notices of every target are merged. A target that failed is a warning once
// another had an event, else its error is returned (joined with the others'). One
// target is simply waited on.
func WaitFirst(ctx context.Context, req WaitRequest, targets []WaitTarget) (*WaitResult, error) {
	call := func(ctx context.Context, t WaitTarget) (*WaitResult, error) {
		sub := req
		sub.SessionIDs = t.IDs
		r, err := t.Svc.Wait(ctx, sub)
		if r != nil && t.Fix != nil {
			t.Fix(r)
		}
		return r, err
	}
	if len(targets) == 1 {
		return call(ctx, targets[0])
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		t   WaitTarget
		r   *WaitResult
		err error
	}
	answers := make(chan answer, len(targets))
	for _, t := range targets {
		// One wait per target: owned by this call, ends when it returns or wctx ends.
		go func() {
			r, err := call(wctx, t)
			answers <- answer{t, r, err}
		}()
	}
	var win *WaitResult
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
				errs = append(errs, fmt.Errorf("%s: %w", a.t.Name, a.err))
			}
		case win == nil:
			win = a.r
		case win.SessionID == "" && win.ReturnedBecause == BecauseNoSessions && a.r.SessionID == "" && a.r.ReturnedBecause != BecauseNoSessions:
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
