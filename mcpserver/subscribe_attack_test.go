package mcpserver

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/route"
	"github.com/ptyhub/ptyhub/session"
)

// updates records the notifications/resources/updated one client received.
type updates struct {
	mu  sync.Mutex
	got map[string]int
}

func (u *updates) count(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.got[uri]
}

// connectRecording connects an MCP client to a new Server of svc and records the
// resource updates it hears. protocol is the version the client asks for ("": the
// SDK's latest).
func connectRecording(t *testing.T, svc session.Service, protocol string) (*mcp.ClientSession, *updates) {
	t.Helper()
	u := &updates{got: map[string]int{}}
	cs := connectClient(t, svc, Options{}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			u.mu.Lock()
			u.got[r.Params.URI]++
			u.mu.Unlock()
		},
	}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	return cs, u
}

// TestSubscribersUnderChurn drives the resource subscriptions of several MCP clients of
// one manager (with either protocol's subscriptions) while sessions start and end at once: every client subscribed to a
// session before it ended hears that it ended (notifications/resources/updated), whatever
// the other clients subscribe and unsubscribe meanwhile; nothing deadlocks, and once the
// clients are gone no goroutine of theirs is left.
func TestSubscribersUnderChurn(t *testing.T) {
	base := runtime.NumGoroutine()
	m, err := session.NewManager(session.Options{NoRecord: true, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	starter := m.NewClient("starter")
	for _, protocol := range []string{"", "2025-06-18"} { // subscriptions/listen; resources/subscribe
		t.Run("protocol "+protocol, func(t *testing.T) {
			driveSubscribers(t, func() session.Service { return m.NewClient("agent") }, []*session.Client{starter}, protocol)
		})
	}
	m.Close(context.Background())
	checkGoroutines(t, base)
}

// TestRouterSubscribersUnderChurn: the same through a Router (what ptyhub mcp serves):
// its own manager and a member (another manager, as the ptyhub server is), the sessions
// started on each in turn, every client's Watch merging both.
func TestRouterSubscribersUnderChurn(t *testing.T) {
	base := runtime.NumGoroutine()
	state := t.TempDir()
	var ms []*session.Manager
	for range 2 {
		m, err := session.NewManager(session.Options{NoRecord: true, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(context.Background())
		ms = append(ms, m)
	}
	member := route.Member{Name: "the ptyhub server", Svc: ms[1].NewClient("server")}
	router := func() session.Service {
		return &route.Router{Local: ms[0].NewClient("agent"),
			Members: func(context.Context) ([]route.Member, []string) { return []route.Member{member}, nil }}
	}
	driveSubscribers(t, router, []*session.Client{ms[0].NewClient("starter"), ms[1].NewClient("starter")}, "")
	for _, m := range ms {
		m.Close(context.Background())
	}
	checkGoroutines(t, base)
}

// driveSubscribers connects clients MCP clients, each to a Server of its own service
// (svc()), then runs rounds: a session starts (from starters in turn), every client
// subscribes to it while unsubscribing and subscribing again to an earlier one, and the
// session ends (by itself at once, or killed). Each client must hear of each end. The
// clients are closed when it returns.
func driveSubscribers(t *testing.T, svc func() session.Service, starters []*session.Client, protocol string) {
	const clients, rounds = 4, 24
	type client struct {
		cs *mcp.ClientSession
		u  *updates
	}
	var cls []client
	t.Run("drive", func(t *testing.T) {
		for range clients {
			cs, u := connectRecording(t, svc(), protocol)
			cls = append(cls, client{cs, u})
		}
		ctx := context.Background()
		zero := int64(0)
		var lost []string
		var ids []string
		for round := range rounds {
			starter := starters[round%len(starters)]
			// Odd rounds: a session that ends by itself at once; even: one killed.
			argv := []string{"sh", "-c", "read x"}
			if round%2 == 1 {
				argv = []string{"true"}
			}
			r, err := starter.Exec(ctx, session.ExecRequest{Argv: argv, YieldTimeMs: &zero})
			if err != nil {
				t.Fatal(err)
			}
			uri := sessionURI(r.SessionID)
			ids = append(ids, r.SessionID)
			var wg sync.WaitGroup
			for i, c := range cls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
						t.Errorf("subscribe %s: %v", uri, err)
					}
					// Churn: the clients' subscriptions to earlier sessions come and go.
					if round > 1 {
						old := sessionURI(ids[round-1-i%2])
						c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: old})
						c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: old})
					}
				}()
			}
			wg.Wait()
			if round%2 == 0 {
				if _, err := starter.Kill(ctx, session.KillRequest{SessionID: r.SessionID}); err != nil {
					t.Fatal(err)
				}
			}
			for i, c := range cls {
				deadline := time.Now().Add(20 * time.Second)
				for c.u.count(uri) == 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if c.u.count(uri) == 0 {
					lost = append(lost, fmt.Sprintf("client %d: %s (%v)", i, uri, argv))
				}
			}
		}
		if len(lost) > 0 {
			t.Errorf("%d of %d subscribed ends were never told: %v", len(lost), clients*rounds, lost)
		}
	})
	// The subtest's cleanups closed the clients.
}

// checkGoroutines fails t when more goroutines than base (and the two the race runtime
// and the test framework may keep) are left once everything was closed.
func checkGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > base+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left (were %d):\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// TestSubscriberHearsEndSeenFirst: a session that started and ended between two rounds
// of the resources watch (the watch first sees it already ended) is told to the client
// that subscribed to it from its exec's result; before, only a session seen running
// first was.
func TestSubscriberHearsEndSeenFirst(t *testing.T) {
	svc := &steppedWatch{calls: make(chan watchCall)}
	cs, u := connectRecording(t, svc, "")
	c := svc.next(t)
	c.answer <- &session.WatchResult{Generation: 1, Events: []session.WatchEvent{}}
	c = svc.next(t) // waits for a change
	subscribed := make(chan error, 1)
	go func() {
		subscribed <- cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: sessionURI("1")})
	}()
	// The subscription cancels the round in flight; the next one is answered with the
	// session already exited.
	select {
	case <-c.ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the subscription did not cancel the round in flight")
	}
	if err := <-subscribed; err != nil {
		t.Fatal(err)
	}
	c = svc.next(t)
	c.answer <- &session.WatchResult{Generation: 2, Events: []session.WatchEvent{}, Delta: true,
		Sessions: []session.WatchSession{{SessionID: "1", State: session.StateExited}}}
	for deadline := time.Now().Add(30 * time.Second); u.count(sessionURI("1")) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the subscriber never heard that session 1 ended")
		}
	}
}
