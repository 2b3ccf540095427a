package route

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// Member is a service of a Router other than its Local one.
type Member struct {
	// Name names it in warnings and errors ("host ssh://box", "ptyhub mcp (pid 12)",
	// "the ptyhub server").
	Name string
	// Prefix, when set, is the host its sessions are on: their ids read Prefix:ID. Without
	// one its ids are this machine's (short ids are unique across its processes) and a
	// session is found by asking Local first, then by listing.
	Prefix string
	Svc    session.Service
}

// Router is a session.Service over the sessions of Local and of every Member. Its id
// policy is Host: an id HOST:ID (split at the last ':', so URLs with ports work) whose
// HOST Host accepts is that host's session ID, and every result, listing and notice of a
// host's sessions carries the prefix. Any other id is Local's or, when Local does not
// have it, the one unprefixed member's whose listing has it. Nothing is asked of the
// members while Local has the session named.
//
// Exec starts in Local, or on ExecRequest.Host (else DefaultHost). List merges every
// member's listing (asked at once, each within memberCallTimeout; one that cannot answer
// is a warning). Wait and Watch run on every member concerned at once, and the first
// event wins. A call to one host also learns, aside, what ended on the others used, so
// the next result reports it.
type Router struct {
	Local session.Service
	// Members returns the members (those used so far, for hosts), and warnings about
	// those that cannot be reached. Nil: none.
	Members func(ctx context.Context) ([]Member, []string)
	// Host returns the member that reaches host name (a URL or a configured name), adding
	// it on first use. Nil: ids have no host prefix.
	Host func(name string) (Member, error)
	// DefaultHost, when set, is where Exec runs without a host argument.
	DefaultHost string
	// LocalWatch: Watch follows Local alone (the server: each agent follows its own).
	LocalWatch bool
	// LocalName, when set, is the Where of Local's sessions in a Watch (whose they are).
	LocalName string

	mu sync.Mutex
	// pending: sessions of the other hosts that ended, learnt by refresh and not yet
	// reported; refreshing: hosts ("" is Local) with a refresh in flight.
	pending    []session.Ended
	refreshing map[string]bool
	watch      watchState // watch.go
	// hostsMoved is cancelled when a host is used (a Watch in flight then looks again);
	// moveHosts cancels it. Both nil until a Watch makes them, and again after a move.
	hostsMoved context.Context
	moveHosts  context.CancelFunc
}

// memberCallTimeout bounds one call to a member on behalf of a listing or a lookup: a
// stopped ptyhub mcp (a suspended agent) must not hold up `ptyhub ls` for long.
const memberCallTimeout = 5 * time.Second

// Sep separates a host's name from a session id.
const Sep = ":"

var (
	_ session.Service = (*Router)(nil)
	_ session.Asker   = (*Router)(nil)
)

func (r *Router) members(ctx context.Context) ([]Member, []string) {
	if r.Members == nil {
		return nil, nil
	}
	return r.Members(ctx)
}

// byPrefix splits id into the host member that has it and its id there; ok is false for
// an id of this machine (no prefix, or one that names no host: a name may hold a ':').
func (r *Router) byPrefix(id string) (m Member, rest string, ok bool) {
	i := strings.LastIndex(id, Sep)
	if r.Host == nil || i <= 0 {
		return Member{}, id, false
	}
	m, err := r.Host(id[:i])
	if err != nil {
		return Member{}, id, false
	}
	return m, id[i+1:], true
}

// Locate returns the member that has session id and its id there: a host's by its
// prefix, else the first unprefixed member whose listing has it (nil when none has it;
// an error when it names different sessions in several, a name two agents gave). Local
// is not asked.
func (r *Router) Locate(ctx context.Context, id string) (*Member, string, error) {
	if m, rest, ok := r.byPrefix(id); ok {
		return &m, rest, nil
	}
	members, _ := r.members(ctx)
	var same []Member
	for _, m := range members {
		if m.Prefix == "" {
			same = append(same, m)
		}
	}
	m, err := locate(ctx, same, id)
	return m, id, err
}

// routed calls call on the service that has session *id: a host's (with *id set to its
// id there, and the prefix put back on the result by fix), else Local, and when Local
// has no such session, the member that has it.
func routed[Req, Res any](r *Router, ctx context.Context, id *string, req *Req, call func(session.Service, context.Context, Req) (Res, error), fix func(Res, string)) (Res, error) {
	var zero Res
	if m, rest, ok := r.byPrefix(*id); ok {
		*id = rest
		r.refresh(m.Prefix)
		res, err := call(m.Svc, ctx, *req)
		if err == nil {
			fix(res, m.Prefix)
		}
		return res, err
	}
	r.refresh("")
	res, err := call(r.Local, ctx, *req)
	if errors.Is(err, session.ErrNotFound) && r.Members != nil {
		var m *Member
		var lerr error
		if m, _, lerr = r.Locate(ctx, *id); lerr != nil {
			return zero, lerr
		}
		if m != nil {
			res, err = call(m.Svc, ctx, *req)
		}
	}
	if err == nil {
		fix(res, "")
	}
	return res, err
}

// finish puts host prefix on a result's session id and notices, and adds the ended
// sessions of the other hosts learnt meanwhile.
func (r *Router) finish(prefix string, id *string, n *session.Notices) {
	*id = withPrefix(prefix, *id)
	prefixNotices(prefix, n)
	r.drain(n)
}

func withPrefix(prefix, id string) string {
	if prefix == "" || id == "" {
		return id
	}
	return prefix + Sep + id
}

func prefixNotices(prefix string, n *session.Notices) {
	for i := range n.EndedSinceLastCall {
		n.EndedSinceLastCall[i].SessionID = withPrefix(prefix, n.EndedSinceLastCall[i].SessionID)
	}
}

// Exec implements session.Service: the session starts in Local, or on the host named by
// req.Host (else DefaultHost; "local" is Local).
func (r *Router) Exec(ctx context.Context, req session.ExecRequest) (*session.Result, error) {
	name := req.Host
	if name == "" {
		name = r.DefaultHost
	}
	req.Host = ""
	svc, prefix := r.Local, ""
	if name != "" && name != "local" {
		if r.Host == nil {
			return nil, fmt.Errorf("%w: this ptyhub reaches no other host (host %q)", session.ErrInvalid, name)
		}
		m, err := r.Host(name)
		if err != nil {
			return nil, err
		}
		svc, prefix = m.Svc, m.Prefix
		defer r.moved()
	}
	r.refresh(prefix)
	res, err := svc.Exec(ctx, req)
	if res != nil {
		r.finish(prefix, &res.SessionID, &res.Notices)
	}
	return res, err
}

// Write implements session.Service.
func (r *Router) Write(ctx context.Context, req session.WriteRequest) (*session.Result, error) {
	return routed(r, ctx, &req.SessionID, &req, session.Service.Write, r.fixResult)
}

// Read implements session.Service.
func (r *Router) Read(ctx context.Context, req session.ReadRequest) (*session.Result, error) {
	return routed(r, ctx, &req.SessionID, &req, session.Service.Read, r.fixResult)
}

func (r *Router) fixResult(res *session.Result, prefix string) {
	r.finish(prefix, &res.SessionID, &res.Notices)
}

// Kill implements session.Service.
func (r *Router) Kill(ctx context.Context, req session.KillRequest) (*session.KillResult, error) {
	return routed(r, ctx, &req.SessionID, &req, session.Service.Kill, func(res *session.KillResult, prefix string) {
		r.finish(prefix, &res.SessionID, &res.Notices)
	})
}

// Resize implements session.Service.
func (r *Router) Resize(ctx context.Context, req session.ResizeRequest) (*session.ResizeResult, error) {
	return routed(r, ctx, &req.SessionID, &req, session.Service.Resize, func(res *session.ResizeResult, prefix string) {
		r.finish(prefix, &res.SessionID, &res.Notices)
	})
}

// AskHuman implements session.Asker.
func (r *Router) AskHuman(ctx context.Context, req session.AskRequest) (*session.AskResult, error) {
	return routed(r, ctx, &req.SessionID, &req, askHuman, func(res *session.AskResult, prefix string) {
		r.finish(prefix, &res.SessionID, &res.Notices)
	})
}

// List implements session.Service: Local's sessions, then every member's (asked at once,
// each within memberCallTimeout), a session seen through two members once (by UUID),
// sorted by short id; a member that cannot answer is a warning.
func (r *Router) List(ctx context.Context) (*session.ListResult, error) {
	members, warns := r.members(ctx)
	var answers []listAnswer
	done := make(chan struct{})
	go func() { answers = listEach(ctx, members); close(done) }() // owned by this call
	res, err := r.Local.List(ctx)
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
		m := members[i]
		if a.err != nil {
			res.AddWarning(fmt.Sprintf("%s: %v", m.Name, a.err))
			continue
		}
		for _, in := range a.r.Sessions {
			if !seen[in.UUID] {
				seen[in.UUID] = true
				in.SessionID = withPrefix(m.Prefix, in.SessionID)
				res.Sessions = append(res.Sessions, in)
			}
		}
		prefixNotices(m.Prefix, &a.r.Notices)
		res.EndedSinceLastCall = append(res.EndedSinceLastCall, a.r.EndedSinceLastCall...)
		for _, w := range a.r.Warnings {
			res.AddWarning(fmt.Sprintf("%s: %s", m.Name, w))
		}
	}
	sort.SliceStable(res.Sessions, func(i, j int) bool {
		return idLess(res.Sessions[i].SessionID, res.Sessions[j].SessionID)
	})
	r.drain(&res.Notices)
	return res, nil
}

// idLess orders session ids: this machine's short ids by number, then hosts' by host
// and number.
func idLess(a, b string) bool {
	ha, na := splitID(a)
	hb, nb := splitID(b)
	if ha != hb {
		return ha < hb
	}
	return na < nb
}

func splitID(id string) (host string, n int) {
	i := strings.LastIndex(id, Sep)
	n, _ = strconv.Atoi(id[i+1:])
	if i < 0 {
		return "", n
	}
	return id[:i], n
}

// listAnswer is one member's listing, or why it has none.
type listAnswer struct {
	r   *session.ListResult
	err error
}

// listEach lists every member at once, each within memberCallTimeout.
func listEach(ctx context.Context, members []Member) []listAnswer {
	answers := make([]listAnswer, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
			defer cancel()
			res, err := m.Svc.List(lctx)
			answers[i] = listAnswer{res, err}
		})
	}
	wg.Wait()
	return answers
}

// locate returns the first of members that has session id (a short id, UUID prefix or
// name): nil when none has it, an error when it names different sessions in several (a
// name two agents gave). One session seen through two members (a host's session as the
// server lists it) is one session.
func locate(ctx context.Context, members []Member, id string) (*Member, error) {
	id = strings.TrimSpace(id)
	if id == "" || len(members) == 0 {
		return nil, nil
	}
	hits := make([]string, len(members)) // the UUID each member has under id
	for i, a := range listEach(ctx, members) {
		if a.err != nil {
			continue
		}
		for _, in := range a.r.Sessions {
			if SessionIs(in, id) {
				hits[i] = in.UUID
				break
			}
		}
	}
	var first *Member
	var names []string
	uuids := map[string]bool{}
	for i, u := range hits {
		if u == "" {
			continue
		}
		if first == nil {
			first = &members[i]
		}
		if !uuids[u] {
			uuids[u] = true
			names = append(names, members[i].Name)
		}
	}
	if len(uuids) > 1 {
		return nil, fmt.Errorf("%w: %q names sessions of %s; use the session's short id", session.ErrInvalid, id, strings.Join(names, " and "))
	}
	return first, nil
}

// SessionIs reports whether id (a short id, a host's HOST:ID, a UUID or unique prefix,
// or a name) names in.
func SessionIs(in session.Info, id string) bool {
	if in.SessionID == id {
		return true
	}
	if _, err := strconv.Atoi(id); err == nil {
		return false
	}
	return in.Name == id || strings.HasPrefix(in.UUID, strings.ToLower(id))
}

// refresh learns, in the background, which sessions ended on every host other than the
// one a call goes to (prefix; "" is this machine), so that the next result can report
// them: each server tells a connection what ended since its last call, and a call to one
// host says nothing of the others. At most one refresh per host is in flight; nothing
// happens while only this machine is used, and a host is never dialled just to look.
func (r *Router) refresh(prefix string) {
	if r.Host == nil {
		return
	}
	members, _ := r.members(context.Background())
	others := map[string]session.Service{"": r.Local}
	for _, m := range members {
		if m.Prefix != "" {
			if p, ok := m.Svc.(*Peer); !ok || p.Connected() {
				others[m.Prefix] = m.Svc
			}
		}
	}
	if len(others) == 1 && prefix == "" {
		return
	}
	delete(others, prefix)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refreshing == nil {
		r.refreshing = map[string]bool{}
	}
	for n, svc := range others {
		if r.refreshing[n] {
			continue
		}
		r.refreshing[n] = true
		// The refresher: owned by the Router; ends when List returns (bounded by its
		// timeout; a closed connection answers at once).
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err := svc.List(ctx)
			cancel()
			r.mu.Lock()
			defer r.mu.Unlock()
			r.refreshing[n] = false
			if err != nil {
				return
			}
			prefixNotices(n, &res.Notices)
			r.pending = append(r.pending, res.EndedSinceLastCall...)
		}()
	}
}

// moved wakes the Watch calls in flight, so that they follow a host that was used.
func (r *Router) moved() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hostsMoved != nil {
		r.moveHosts()
		r.hostsMoved, r.moveHosts = nil, nil
	}
}

// drain adds what refresh learnt to a result's notices.
func (r *Router) drain(n *session.Notices) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n.EndedSinceLastCall = append(n.EndedSinceLastCall, r.pending...)
	r.pending = nil
}
