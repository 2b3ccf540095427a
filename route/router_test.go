package route

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// fedService is a session.Service with a fixed list of sessions; calls about one of
// them are recorded, others fail with session.ErrNotFound.
type fedService struct {
	name     string
	sessions []session.Info
	mu       sync.Mutex
	wrote    []string
	lists    int
	// wait, when set, answers Wait for known ids.
	wait func(session.WaitRequest) (*session.WaitResult, error)
}

func (f *fedService) has(id string) bool {
	return slices.ContainsFunc(f.sessions, func(in session.Info) bool { return SessionIs(in, id) })
}

func (f *fedService) notFound(id string) error {
	return fmt.Errorf("%w %s: no such session", session.ErrNotFound, id)
}

func (f *fedService) Exec(context.Context, session.ExecRequest) (*session.Result, error) {
	return &session.Result{SessionID: f.name}, nil
}
func (f *fedService) Write(_ context.Context, r session.WriteRequest) (*session.Result, error) {
	if !f.has(r.SessionID) {
		return nil, f.notFound(r.SessionID)
	}
	f.mu.Lock()
	f.wrote = append(f.wrote, r.SessionID)
	f.mu.Unlock()
	return &session.Result{SessionID: r.SessionID, Output: f.name}, nil
}
func (f *fedService) Read(_ context.Context, r session.ReadRequest) (*session.Result, error) {
	if !f.has(r.SessionID) {
		return nil, f.notFound(r.SessionID)
	}
	return &session.Result{SessionID: r.SessionID, Output: f.name}, nil
}
func (f *fedService) List(context.Context) (*session.ListResult, error) {
	f.mu.Lock()
	f.lists++
	f.mu.Unlock()
	return &session.ListResult{Sessions: slices.Clone(f.sessions)}, nil
}
func (f *fedService) Kill(_ context.Context, r session.KillRequest) (*session.KillResult, error) {
	if !f.has(r.SessionID) {
		return nil, f.notFound(r.SessionID)
	}
	return &session.KillResult{SessionID: r.SessionID}, nil
}
func (f *fedService) Resize(_ context.Context, r session.ResizeRequest) (*session.ResizeResult, error) {
	if !f.has(r.SessionID) {
		return nil, f.notFound(r.SessionID)
	}
	return &session.ResizeResult{SessionID: r.SessionID}, nil
}
func (f *fedService) Wait(ctx context.Context, r session.WaitRequest) (*session.WaitResult, error) {
	for _, id := range r.SessionIDs {
		if !f.has(id) {
			return nil, f.notFound(id)
		}
	}
	if f.wait != nil {
		return f.wait(r)
	}
	<-ctx.Done()
	return &session.WaitResult{Result: session.Result{ReturnedBecause: session.BecauseCancelled}}, nil
}
func (f *fedService) Watch(context.Context, session.WatchRequest) (*session.WatchResult, error) {
	return &session.WatchResult{}, nil
}

func TestRouterFindsOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	local := &fedService{name: "local", sessions: []session.Info{{SessionID: "1", UUID: "aaaa", Name: "mine"}}}
	// A host lists its own session, and the server lists it too (its host's): one session.
	host := &fedService{name: "host", sessions: []session.Info{{SessionID: "7", UUID: "bbbb", Name: "dev"}}}
	srv := &fedService{name: "server", sessions: []session.Info{{SessionID: "9", UUID: "cccc", Name: "dev2"}, {SessionID: "7", UUID: "bbbb", Name: "dev"}}}
	other := &fedService{name: "other", sessions: []session.Info{{SessionID: "12", UUID: "dddd", Name: "dev"}}}
	f := &Router{Local: local, Members: func(context.Context) ([]Member, []string) {
		return []Member{{Name: "host", Svc: host}, {Name: "the server", Svc: srv}}, []string{"a host that did not answer"}
	}}

	// Local's own sessions never ask the others.
	if r, err := f.Write(ctx, session.WriteRequest{SessionID: "mine"}); err != nil || r.Output != "local" {
		t.Fatalf("write to a local session: %v %+v", err, r)
	}
	if host.lists+srv.lists != 0 {
		t.Errorf("a call about a local session listed the others (%d, %d)", host.lists, srv.lists)
	}
	// Another's session, by id, name and UUID prefix: the first that has it.
	for _, id := range []string{"7", "dev", "bbb"} {
		if r, err := f.Read(ctx, session.ReadRequest{SessionID: id}); err != nil || r.Output != "host" {
			t.Errorf("read %q: %v %+v", id, err, r)
		}
	}
	if r, err := f.Kill(ctx, session.KillRequest{SessionID: "9"}); err != nil || r.SessionID != "9" {
		t.Errorf("kill 9: %v %+v", err, r)
	}
	if _, err := f.Resize(ctx, session.ResizeRequest{SessionID: "404"}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("resize of an unknown session: %v", err)
	}
	// One name, two sessions in two processes: ambiguous, nothing written.
	f2 := &Router{Local: local, Members: func(context.Context) ([]Member, []string) {
		return []Member{{Name: "host", Svc: host}, {Name: "other", Svc: other}}, nil
	}}
	if _, err := f2.Write(ctx, session.WriteRequest{SessionID: "dev"}); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("write to an ambiguous name: %v", err)
	}
	if len(host.wrote)+len(other.wrote) != 0 {
		t.Errorf("an ambiguous write reached %v %v", host.wrote, other.wrote)
	}
	// The listing: each session once, by id, with the others' warnings.
	l, err := f.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range l.Sessions {
		ids = append(ids, in.SessionID)
	}
	if !slices.Equal(ids, []string{"1", "7", "9"}) || !slices.Contains(l.Warnings, "a host that did not answer") {
		t.Errorf("list: %v, warnings %v", ids, l.Warnings)
	}
	if r, _ := f.Exec(ctx, session.ExecRequest{}); r.SessionID != "local" {
		t.Errorf("exec ran in %s", r.SessionID)
	}
}

func TestRouterWaitAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	local := &fedService{name: "local", sessions: []session.Info{{SessionID: "1", UUID: "aaaa"}}}
	host := &fedService{name: "host", sessions: []session.Info{{SessionID: "7", UUID: "bbbb"}},
		wait: func(r session.WaitRequest) (*session.WaitResult, error) {
			return &session.WaitResult{Result: session.Result{SessionID: r.SessionIDs[0], ReturnedBecause: session.BecauseExit}}, nil
		}}
	f := &Router{Local: local, Members: func(context.Context) ([]Member, []string) {
		return []Member{{Name: "host", Svc: host}}, nil
	}}
	r, err := f.Wait(ctx, session.WaitRequest{SessionIDs: []string{"1", "7"}})
	if err != nil || r.SessionID != "7" || r.ReturnedBecause != session.BecauseExit {
		t.Fatalf("wait over two processes: %v %+v", err, r)
	}
	if _, err := f.Wait(ctx, session.WaitRequest{SessionIDs: []string{"1", "404"}}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("wait naming an unknown session: %v", err)
	}
}

// watchService is a fedService whose Watch follows a generation the test moves.
type watchService struct {
	fedService
	mu       sync.Mutex
	gen      uint64
	sessions []session.WatchSession
	fail     error
	moved    chan struct{}
}

func newWatchService(ss ...session.WatchSession) *watchService {
	return &watchService{gen: 1, sessions: ss, moved: make(chan struct{})}
}

// set replaces the sessions and moves the generation.
func (w *watchService) set(fail error, ss ...session.WatchSession) {
	w.mu.Lock()
	w.gen++
	w.sessions, w.fail = ss, fail
	close(w.moved)
	w.moved = make(chan struct{})
	w.mu.Unlock()
}

func (w *watchService) Watch(ctx context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	w.mu.Lock()
	gen, moved, fail := w.gen, w.moved, w.fail
	w.mu.Unlock()
	if gen == req.Since {
		select {
		case <-moved:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil || fail != nil {
		return nil, w.fail
	}
	return &session.WatchResult{Generation: w.gen, Events: []session.WatchEvent{}, Sessions: slices.Clone(w.sessions)}, nil
}

// Watch covers Local and a host: the first answer lists both (the host's ids with its
// prefix, each saying whose); a change on the host comes back as a change, with its
// prefix; a host that stops answering has its sessions removed.
func TestRouterWatchEveryMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	local := newWatchService(session.WatchSession{SessionID: "1", State: session.StateRunning})
	host := newWatchService(session.WatchSession{SessionID: "3", State: session.StateRunning})
	box := Member{Name: "host box", Prefix: "box", Svc: host}
	r := &Router{Local: local,
		Host:    func(name string) (Member, error) { return box, nil },
		Members: func(context.Context) ([]Member, []string) { return []Member{box}, nil }}
	first, err := r.Watch(ctx, session.WatchRequest{Since: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	want := []session.WatchSession{{SessionID: "1", State: session.StateRunning}, {SessionID: "box:3", State: session.StateRunning, Where: "host box"}}
	if first.Delta || !slices.Equal(first.Sessions, want) {
		t.Fatalf("first watch: delta %v, sessions %+v; want %+v", first.Delta, first.Sessions, want)
	}
	go host.set(nil, session.WatchSession{SessionID: "3", State: session.StateExited})
	next, err := r.Watch(ctx, session.WatchRequest{Since: first.Generation})
	if err != nil {
		t.Fatal(err)
	}
	want = []session.WatchSession{{SessionID: "box:3", State: session.StateExited, Where: "host box"}}
	if next.Generation == first.Generation || !slices.Equal(next.Sessions, want) {
		t.Fatalf("after the host's session ended: generation %d (was %d), sessions %+v; want %+v", next.Generation, first.Generation, next.Sessions, want)
	}
	go host.set(errors.New("connection lost"))
	gone, err := r.Watch(ctx, session.WatchRequest{Since: next.Generation})
	if err != nil {
		t.Fatal(err)
	}
	if !gone.Delta || !slices.Equal(gone.Removed, []string{"box:3"}) {
		t.Fatalf("after the host stopped answering: delta %v, removed %v; want box:3 removed", gone.Delta, gone.Removed)
	}
}

// fedConn is a fedService as a peer's connection.
type fedConn struct {
	*fedService
	done chan struct{}
}

func (c fedConn) Done() <-chan struct{} { return c.done }
func (c fedConn) Abandon()              {}

// A watch asks its members again on every change of the router's own sessions; a peer
// with no server to look at (its Look fails) is not dialled again for each of them, and
// a connection made by a call that may dial is used by the next look at once.
func TestPeerRemembersFailedLook(t *testing.T) {
	defer func(q time.Duration) { lookQuiet = q }(lookQuiet)
	lookQuiet = time.Hour // the test's looks all come within it, however slow the machine
	ctx := context.Background()
	var mu sync.Mutex
	looks, dials := 0, 0
	p := &Peer{Name: "the ptyhub server",
		Look: func(context.Context) (Conn, error) {
			mu.Lock()
			looks++
			mu.Unlock()
			return nil, errors.New("no server")
		},
		Dial: func(context.Context) (Conn, error) {
			mu.Lock()
			dials++
			mu.Unlock()
			return fedConn{&fedService{name: "server"}, make(chan struct{})}, nil
		}}
	for i := range 3 {
		if _, err := p.Watch(ctx, session.WatchRequest{}); err == nil || err.Error() != "no server" {
			t.Fatalf("look %d: err %v, want the failed look's", i, err)
		}
	}
	mu.Lock()
	if looks != 1 {
		t.Errorf("three looks with no server dialled it %d times, want once", looks)
	}
	mu.Unlock()
	if _, err := p.List(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Watch(ctx, session.WatchRequest{}); err != nil {
		t.Fatalf("a look after a call connected: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if looks != 1 || dials != 1 {
		t.Errorf("looks %d, dials %d; want 1 and 1 (the look uses the call's connection)", looks, dials)
	}
}

// goroutinesCreated is how many goroutines this process has created so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A peer with no server to look at (its failed Look remembered) answers a Watch round
// at once: the round starts no goroutine, not one for the peer and not one for Local's
// watch (which runs on the round's own, the one member left to wait for), and still
// reports the peer's failure (its sessions out of view). With no server
// running, ptyhub mcp's resources watch makes such a round on every start, exit and
// removal of a session. Not parallel: it counts the goroutines the process creates.
func TestRouterWatchQuietPeerNoGoroutine(t *testing.T) {
	defer func(q time.Duration) { lookQuiet = q }(lookQuiet)
	lookQuiet = time.Hour
	ctx := context.Background()
	local := newWatchService(session.WatchSession{SessionID: "1", State: session.StateRunning})
	peer := &Peer{Name: "the ptyhub server",
		Look: func(context.Context) (Conn, error) { return nil, errors.New("no server") },
		Dial: func(context.Context) (Conn, error) { return nil, errors.New("no server") }}
	if _, err := peer.Watch(ctx, session.WatchRequest{}); err == nil {
		t.Fatal("the peer's look succeeded")
	}
	r := &Router{Local: local, Members: func(context.Context) ([]Member, []string) {
		return []Member{{Name: peer.Name, Svc: peer}}, nil
	}}
	res, err := r.Watch(ctx, session.WatchRequest{Since: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	fewest := ^uint64(0)
	for range 5 { // the fewest of a few rounds: another goroutine may start meanwhile
		go local.set(nil, session.WatchSession{SessionID: "1", State: session.StateExited})
		before := goroutinesCreated()
		next, err := r.Watch(ctx, session.WatchRequest{Since: res.Generation})
		created := goroutinesCreated() - before
		if err != nil {
			t.Fatal(err)
		}
		if next.Generation == res.Generation || len(next.Sessions) != 1 {
			t.Fatalf("a round after Local changed: generation %d (was %d), sessions %+v", next.Generation, res.Generation, next.Sessions)
		}
		res = next
		fewest = min(fewest, created)
	}
	if fewest != 0 {
		t.Errorf("a watch round over Local and a quiet peer created %d goroutines, want none", fewest)
	}
}

// A Watch round over Local and a peer that failed at once (a server not running yet)
// ends, with nothing changed, watchRetry after it began even though Local has no news:
// the caller's next round asks the peer again. Local's watch runs on the round's own
// goroutine here (the one member left to wait for), and the retry ends it as it ended
// the round's wait before.
func TestRouterWatchRetriesQuietPeer(t *testing.T) {
	defer func(q, r time.Duration) { lookQuiet, watchRetry = q, r }(lookQuiet, watchRetry)
	lookQuiet, watchRetry = time.Hour, 10*time.Millisecond
	ctx := context.Background()
	local := newWatchService(session.WatchSession{SessionID: "1", State: session.StateRunning})
	peer := &Peer{Name: "the ptyhub server",
		Look: func(context.Context) (Conn, error) { return nil, errors.New("no server") },
		Dial: func(context.Context) (Conn, error) { return nil, errors.New("no server") }}
	if _, err := peer.Watch(ctx, session.WatchRequest{}); err == nil {
		t.Fatal("the peer's look succeeded")
	}
	r := &Router{Local: local, Members: func(context.Context) ([]Member, []string) {
		return []Member{{Name: peer.Name, Svc: peer}}, nil
	}}
	res, err := r.Watch(ctx, session.WatchRequest{Since: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	next, err := r.Watch(ctx, session.WatchRequest{Since: res.Generation})
	if err != nil {
		t.Fatal(err)
	}
	if next.Generation != res.Generation || len(next.Sessions) != 0 || len(next.Removed) != 0 {
		t.Fatalf("a round with no news: generation %d (was %d), sessions %+v, removed %v; want nothing changed", next.Generation, res.Generation, next.Sessions, next.Removed)
	}
}
