package route

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// deltaService is a fedService whose Watch answers with the changes since the
// generation asked for, as a session.Manager does: step adds one session and removes
// the oldest; after whole is set it answers with an empty whole list at a new
// generation (every session gone, as after its change log was overrun).
type deltaService struct {
	fedService
	mu      sync.Mutex
	gen     uint64
	first   int           // the oldest id alive
	next    int           // the next id to add
	changes []deltaChange // changes[i] made generation i+2
	whole   bool          // answer with an empty whole list
}

type deltaChange struct{ added, removed string }

func newDeltaService(n int) *deltaService {
	return &deltaService{gen: 1, first: 1, next: n + 1}
}

func (d *deltaService) step() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.changes = append(d.changes, deltaChange{added: strconv.Itoa(d.next), removed: strconv.Itoa(d.first)})
	d.next++
	d.first++
	d.gen++
}

func (d *deltaService) Watch(_ context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := &session.WatchResult{Generation: d.gen, Events: []session.WatchEvent{}}
	switch {
	case d.whole:
	case req.Since >= 1 && req.Since < d.gen:
		r.Delta = true
		for _, c := range d.changes[req.Since-1:] {
			r.Removed = append(r.Removed, c.removed)
			r.Sessions = append(r.Sessions, session.WatchSession{SessionID: c.added, State: session.StateRunning})
		}
	default:
		for id := d.first; id < d.next; id++ {
			r.Sessions = append(r.Sessions, session.WatchSession{SessionID: strconv.Itoa(id), State: session.StateRunning})
		}
	}
	return r, nil
}

// A Watch round after one session started and one was removed, on a member with
// thousands, costs those changes, not a copy of every session's id: the generations
// the Router keeps share their ids (ptyhub mcp's resources watch makes a round on every
// start, exit and removal, beside every idle session). What each kept generation holds
// stays exact: a member's whole list, asked from a generation a few rounds back,
// removes the ids it had then. Not parallel: it counts the bytes the process allocates.
func TestRouterWatchRoundCostsItsChanges(t *testing.T) {
	const sessions, rounds = 4096, 600
	ctx := context.Background()
	far := newDeltaService(sessions)
	member := Member{Name: "the ptyhub server", Svc: far}
	r := &Router{Local: newWatchService(), Members: func(context.Context) ([]Member, []string) { return []Member{member}, nil }}
	res, err := r.Watch(ctx, session.WatchRequest{Since: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sessions) != sessions {
		t.Fatalf("first watch: %d sessions, want %d", len(res.Sessions), sessions)
	}
	gens := []uint64{res.Generation} // the Router's generation after each round
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	for i := range rounds {
		far.step()
		res, err := r.Watch(ctx, session.WatchRequest{Since: gens[len(gens)-1]})
		if err != nil {
			t.Fatal(err)
		}
		added, removed := strconv.Itoa(sessions+1+i), strconv.Itoa(1+i)
		if !res.Delta || !slices.Equal(res.Removed, []string{removed}) || len(res.Sessions) != 1 || res.Sessions[0].SessionID != added {
			t.Fatalf("round %d: delta %v, sessions %+v, removed %v; want %s added, %s removed", i, res.Delta, res.Sessions, res.Removed, added, removed)
		}
		gens = append(gens, res.Generation)
	}
	runtime.ReadMemStats(&ms)
	// A copy of the ids is ~40 bytes an id (160 KiB here); the round itself, its
	// goroutine and the answer take a few KiB.
	if per := (ms.TotalAlloc - before) / rounds; per > 16<<10 {
		t.Errorf("a Watch round with one session added and one removed, beside %d, allocated %d bytes", sessions, per)
	}
	far.mu.Lock()
	far.whole = true
	far.gen++
	far.mu.Unlock()
	for back := 1; back <= 4; back++ {
		res, err := r.Watch(ctx, session.WatchRequest{Since: gens[len(gens)-back]})
		if err != nil {
			t.Fatal(err)
		}
		var want []string // the ids then: rounds-back+1 of them removed, as many added
		for id := rounds - back + 2; id < sessions+rounds-back+2; id++ {
			want = append(want, strconv.Itoa(id))
		}
		slices.Sort(want)
		if got := slices.Sorted(slices.Values(res.Removed)); !res.Delta || !slices.Equal(got, want) {
			t.Fatalf("an empty whole list from the generation %d rounds back: delta %v, %d removed; want the %d ids then", back-1, res.Delta, len(got), len(want))
		}
	}
}

// enteredService is a watchService that tells entered each time its Watch is called,
// and counts the goroutines of the process then.
type enteredService struct {
	*watchService
	entered chan int // runtime.NumGoroutine() at the call
}

func (e *enteredService) Watch(ctx context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	e.entered <- runtime.NumGoroutine()
	return e.watchService.Watch(ctx, req)
}

// With Local as the only member, a Watch round runs Local's Watch on the caller's
// goroutine (no goroutine per round: ptyhub mcp's resources watch makes one on every
// start, exit and removal of a session) and still answers as before: the first round
// lists every session, a change comes back as a delta, and a host used while a round
// waits (the Router's moved) ends that round with nothing changed, so that the caller
// watches again with the host. Not parallel: it counts the process's goroutines.
func TestRouterWatchLocalAlone(t *testing.T) {
	ctx := context.Background()
	local := &enteredService{watchService: newWatchService(session.WatchSession{SessionID: "1", State: session.StateRunning}), entered: make(chan int, 1)}
	r := &Router{Local: local, Members: func(context.Context) ([]Member, []string) { return nil, nil }}
	base := runtime.NumGoroutine()
	first, err := r.Watch(ctx, session.WatchRequest{Since: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	if n := <-local.entered; n > base {
		t.Errorf("goroutines while Local's Watch ran: %d, want at most %d (none started for the round)", n, base)
	}
	want := []session.WatchSession{{SessionID: "1", State: session.StateRunning}}
	if first.Delta || !slices.Equal(first.Sessions, want) {
		t.Fatalf("first watch: delta %v, sessions %+v; want %+v", first.Delta, first.Sessions, want)
	}

	type answer struct {
		res *session.WatchResult
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := r.Watch(ctx, session.WatchRequest{Since: first.Generation})
		answers <- answer{res, err}
	}()
	<-local.entered
	local.set(nil, session.WatchSession{SessionID: "1", State: session.StateExited})
	a := <-answers
	if a.err != nil {
		t.Fatal(a.err)
	}
	want = []session.WatchSession{{SessionID: "1", State: session.StateExited}}
	if !a.res.Delta || a.res.Generation == first.Generation || !slices.Equal(a.res.Sessions, want) {
		t.Fatalf("after the session ended: delta %v, generation %d (was %d), sessions %+v; want a delta with %+v", a.res.Delta, a.res.Generation, first.Generation, a.res.Sessions, want)
	}

	next := a.res.Generation
	go func() {
		res, err := r.Watch(ctx, session.WatchRequest{Since: next})
		answers <- answer{res, err}
	}()
	<-local.entered
	r.moved() // a host was used: the round in flight ends
	a = <-answers
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.res.Generation != next || len(a.res.Sessions) != 0 || len(a.res.Removed) != 0 {
		t.Fatalf("after a host was used: generation %d (was %d), sessions %+v, removed %v; want nothing changed", a.res.Generation, next, a.res.Sessions, a.res.Removed)
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() {
		res, err := r.Watch(cctx, session.WatchRequest{Since: next})
		answers <- answer{res, err}
	}()
	<-local.entered
	cancel()
	if a = <-answers; a.err != context.Canceled {
		t.Fatalf("a round whose context ended: %+v, %v; want context.Canceled", a.res, a.err)
	}
}
