package mcpserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/session"
)

// watchCall is one Watch call of the resources watch, answered by the test.
type watchCall struct {
	ctx    context.Context
	req    session.WatchRequest
	answer chan *session.WatchResult
}

// steppedWatch is a service whose Watch calls the test answers one by one.
type steppedWatch struct {
	fakeService
	calls chan watchCall
}

// next waits for the next Watch call, failing the test after 30 s.
func (s *steppedWatch) next(t *testing.T) watchCall {
	t.Helper()
	select {
	case c := <-s.calls:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("the resources watch did not call Watch")
		return watchCall{}
	}
}

func (s *steppedWatch) Watch(ctx context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	c := watchCall{ctx, req, make(chan *session.WatchResult, 1)}
	select {
	case s.calls <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case res := <-c.answer:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// The resources watch asks again after each change with the same context (a round
// makes no context and starts no goroutine of its own), and a change of the
// subscriptions cancels the Watch in flight and asks again for the new set.
func TestResourcesWatchRounds(t *testing.T) {
	t.Parallel()
	svc := &steppedWatch{calls: make(chan watchCall)}
	s := New(svc, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.res.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	running := []session.WatchSession{{SessionID: "1", State: session.StateRunning}}
	c := svc.next(t)
	c.answer <- &session.WatchResult{Generation: 1, Events: []session.WatchEvent{}, Sessions: running}
	c = svc.next(t)
	if c.req.Since != 1 {
		t.Fatalf("second round since %d, want 1", c.req.Since)
	}
	c.answer <- &session.WatchResult{Generation: 2, Events: []session.WatchEvent{}, Delta: true}
	c2 := svc.next(t)
	if c2.ctx != c.ctx {
		t.Error("a round after a change made a new context: each round should share the watch's context until the subscriptions change")
	}
	if err := s.res.subscribe(ctx, &mcp.SubscribeRequest{Params: &mcp.SubscribeParams{URI: sessionURI("1")}}); err != nil {
		t.Fatal(err)
	}
	c3 := svc.next(t)
	if c2.ctx.Err() == nil {
		t.Error("the subscription did not cancel the Watch in flight")
	}
	if c3.ctx.Err() != nil || !slices.Equal(c3.req.SessionIDs, []string{"1"}) || c3.req.Since != 2 {
		t.Errorf("after subscribing: ctx err %v, session ids %v, since %d; want a live context, [1], 2", c3.ctx.Err(), c3.req.SessionIDs, c3.req.Since)
	}
}
