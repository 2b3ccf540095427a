package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
)

// Options say how to reach hosts.
type Options struct {
	// Name names the client in the host's listings.
	Name string
	// Own: sessions started through the connection end when it is closed (ptyhub mcp);
	// with Token they survive a dropped connection for the server's grace period.
	Own bool
	// Token identifies this client across reconnections (see server.DialOptions.Token).
	Token string
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
}

// DialOptions returns the server.DialOptions that reach t through its transport.
func DialOptions(t Target, o Options) server.DialOptions {
	return server.DialOptions{
		Name:  o.Name,
		Own:   o.Own,
		Token: o.Token,
		Dialer: func(ctx context.Context) (net.Conn, error) {
			return Dial(ctx, t)
		},
		Explain: func(conn net.Conn, err error) error { return explain(t, conn, err) },
	}
}

// explain turns a failed handshake into an error naming the host and the cause.
func explain(t Target, conn net.Conn, err error) error {
	var verr *server.VersionError
	if errors.As(err, &verr) {
		return fmt.Errorf("ptyhub on host %s (%s) speaks protocol %d, this ptyhub (%s) protocol %d: install the same release on both machines",
			t.Name, server.DescribeBuild(verr.Server.Version, verr.Server.Build), verr.Server.Protocol, server.DescribeBuild("", verr.Build), server.Protocol)
	}
	var re *server.RemoteError
	if errors.As(err, &re) {
		return fmt.Errorf("host %s: %w", t.Name, err)
	}
	if c, ok := conn.(*Conn); ok {
		if cerr := c.Err(5 * time.Second); cerr != nil {
			return cerr
		}
	}
	return fmt.Errorf("host %s: %w", t.Name, err)
}

// NewToken returns a random client token.
func NewToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Host is one long-lived connection to a host's server, shared by every call, made on
// first use and made again on the next call after it dropped. It implements
// session.Service. A call in flight when the connection drops returns an error (it is
// not repeated: it may have had its effect); the sessions go on running on the host.
type Host struct {
	target Target
	opts   server.DialOptions

	mu     sync.Mutex // held while dialing, so concurrent first calls share one dial
	client *server.Client
	// dropped: a connection was lost since the last successful dial (guarded by mu).
	dropped bool
	// live mirrors client for connected, which must not wait for a dial in progress.
	live atomic.Pointer[server.Client]
}

// NewHost returns a Host for t; it connects on the first call.
func NewHost(t Target, o Options) *Host {
	return &Host{target: t, opts: DialOptions(t, o)}
}

// connected reports whether the host has a live connection (without making one).
func (h *Host) connected() bool {
	c := h.live.Load()
	if c == nil {
		return false
	}
	select {
	case <-c.Done():
		return false
	default:
		return true
	}
}

// Target returns the host's target.
func (h *Host) Target() Target { return h.target }

// get returns the live client, connecting when there is none; reconnected says the
// connection was made again after one dropped.
func (h *Host) get(ctx context.Context) (c *server.Client, reconnected bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client != nil {
		select {
		case <-h.client.Done():
			h.client.Abandon() // ends the transport
			h.client = nil
			h.live.Store(nil)
			h.dropped = true
		default:
			return h.client, false, nil
		}
	}
	c, err = server.Dial(ctx, h.opts)
	if err != nil {
		return nil, false, err
	}
	h.client = c
	h.live.Store(c)
	reconnected, h.dropped = h.dropped, false
	return c, reconnected, nil
}

// lost rewrites the error of a call whose connection dropped.
func (h *Host) lost(err error) error {
	if errors.Is(err, server.ErrConnLost) {
		return fmt.Errorf("the connection to host %s dropped during the call (%v); its sessions keep running there and the next call reconnects", h.target.Name, err)
	}
	return err
}

func call[Req, Res any](h *Host, ctx context.Context, req Req, f func(*server.Client, context.Context, Req) (Res, error)) (Res, error) {
	c, reconnected, err := h.get(ctx)
	if err != nil {
		var zero Res
		return zero, err
	}
	res, err := f(c, ctx, req)
	if errors.Is(err, server.ErrConnLost) {
		h.forget(c)
	}
	if reconnected && errors.Is(err, session.ErrNotFound) {
		// Say why a session the agent used is gone: the host's server is a new one.
		err = fmt.Errorf("%w: the connection to host %s had dropped since the previous call and was made again, and the ptyhub server there no longer has that session: the host, its container or its ptyhub server restarted, which ended the sessions there (%v)", session.ErrNotFound, h.target.Name, err)
	}
	return res, h.lost(err)
}

// forget drops c if it is still the current client, so the next call connects again.
func (h *Host) forget(c *server.Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client == c {
		h.client = nil
		h.live.Store(nil)
		h.dropped = true
		c.Abandon() // ends the transport; the server keeps the sessions (no bye)
	}
}

// Exec implements session.Service.
func (h *Host) Exec(ctx context.Context, req session.ExecRequest) (*session.Result, error) {
	return call(h, ctx, req, (*server.Client).Exec)
}

// Write implements session.Service.
func (h *Host) Write(ctx context.Context, req session.WriteRequest) (*session.Result, error) {
	return call(h, ctx, req, (*server.Client).Write)
}

// Read implements session.Service.
func (h *Host) Read(ctx context.Context, req session.ReadRequest) (*session.Result, error) {
	return call(h, ctx, req, (*server.Client).Read)
}

// List implements session.Service.
func (h *Host) List(ctx context.Context) (*session.ListResult, error) {
	return call(h, ctx, struct{}{}, func(c *server.Client, ctx context.Context, _ struct{}) (*session.ListResult, error) {
		return c.List(ctx)
	})
}

// Kill implements session.Service.
func (h *Host) Kill(ctx context.Context, req session.KillRequest) (*session.KillResult, error) {
	return call(h, ctx, req, (*server.Client).Kill)
}

// Resize implements session.Service.
func (h *Host) Resize(ctx context.Context, req session.ResizeRequest) (*session.ResizeResult, error) {
	return call(h, ctx, req, (*server.Client).Resize)
}

// Wait implements session.Service.
func (h *Host) Wait(ctx context.Context, req session.WaitRequest) (*session.WaitResult, error) {
	return call(h, ctx, req, (*server.Client).Wait)
}

// Watch implements session.Service.
func (h *Host) Watch(ctx context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	return call(h, ctx, req, (*server.Client).Watch)
}

// Close says goodbye to the host's server (its owned sessions end there, unless keep)
// and ends the transport.
func (h *Host) Close(ctx context.Context, keep bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client == nil {
		return nil
	}
	err := h.client.Close(ctx, keep)
	h.client = nil
	h.live.Store(nil)
	return err
}

// Multi is the session.Service of an agent that works on several machines: the local
// one (Local) and every host it names. ExecRequest.Host (or DefaultHost) picks the
// machine; ids of sessions on a host read HOST:ID, where HOST is the name the agent gave,
// and every call taking an id routes by that prefix. List covers the local server and
// every host used so far.
type Multi struct {
	// Local serves sessions of this machine.
	Local session.Service
	// DefaultHost, when set, is where exec runs without a host argument.
	DefaultHost string
	// Options reach the hosts; Token defaults to a random one per Multi.
	Options Options

	mu    sync.Mutex
	hosts map[string]*Host
	order []string
	// pending: sessions of the other machines that ended, learnt by refresh and not yet
	// reported; refreshing: machines ("" is this one) with a refresh in flight.
	pending    []session.Ended
	refreshing map[string]bool
}

// refresh learns, in the background, which sessions ended on every machine other than
// the one a call goes to (name; "" is this one), so that the next result can report
// them: each machine's server tells a connection what ended since its last call, and a
// call to one machine says nothing of the others. At most one refresh per machine is in
// flight; nothing happens while the agent uses only this machine.
func (m *Multi) refresh(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.hosts) == 0 {
		return
	}
	if m.refreshing == nil {
		m.refreshing = map[string]bool{}
	}
	others := map[string]session.Service{"": m.Local}
	for n, h := range m.hosts {
		others[n] = h
	}
	delete(others, name)
	for n, svc := range others {
		if m.refreshing[n] {
			continue
		}
		if h, ok := svc.(*Host); ok && !h.connected() {
			continue // never dial just to look
		}
		m.refreshing[n] = true
		// The refresher: owned by the Multi; ends when List returns (bounded by its
		// timeout; a closed connection answers at once).
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			r, err := svc.List(ctx)
			cancel()
			m.mu.Lock()
			defer m.mu.Unlock()
			m.refreshing[n] = false
			if err != nil {
				return
			}
			prefixNotices(n, &r.Notices)
			m.pending = append(m.pending, r.EndedSinceLastCall...)
		}()
	}
}

// drain adds what refresh learnt to a result's notices.
func (m *Multi) drain(n *session.Notices) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return
	}
	n.EndedSinceLastCall = append(n.EndedSinceLastCall, m.pending...)
	m.pending = nil
}

// Sep separates a host's name from a session id.
const Sep = ":"

func (m *Multi) host(name string) (*Host, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.hosts[name]; h != nil {
		return h, nil
	}
	t, err := Resolve(name, m.Options.Getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", session.ErrInvalid, err)
	}
	if m.hosts == nil {
		m.hosts = map[string]*Host{}
	}
	if m.Options.Token == "" {
		m.Options.Token = NewToken()
	}
	h := NewHost(t, m.Options)
	m.hosts[name] = h
	m.order = append(m.order, name)
	return h, nil
}

// route splits a session id into the service that has it and its id there. An id whose
// part before the last ':' names no host (a local session's name may hold a ':') is
// this machine's.
func (m *Multi) route(id string) (svc session.Service, name, rest string) {
	i := strings.LastIndex(id, Sep)
	if i <= 0 {
		return m.Local, "", id
	}
	name = id[:i]
	h, err := m.host(name)
	if err != nil {
		return m.Local, "", id
	}
	return h, name, id[i+1:]
}

// at routes *id (setting it to the id on its machine) for a call about one session, and
// starts refreshing the other machines' ended sessions.
func (m *Multi) at(id *string) (svc session.Service, name string) {
	svc, name, *id = m.route(*id)
	m.refresh(name)
	return svc, name
}

// finish puts machine name back on the session id and notices of a routed call's result
// and adds the other machines' ended sessions learnt meanwhile.
func (m *Multi) finish(name string, id *string, n *session.Notices) {
	if name != "" {
		*id = prefix(name, *id)
		prefixNotices(name, n)
	}
	m.drain(n)
}

func prefix(name, id string) string {
	if name == "" || id == "" {
		return id
	}
	return name + Sep + id
}

func prefixNotices(name string, n *session.Notices) {
	for i := range n.EndedSinceLastCall {
		n.EndedSinceLastCall[i].SessionID = prefix(name, n.EndedSinceLastCall[i].SessionID)
	}
}

// Exec implements session.Service.
func (m *Multi) Exec(ctx context.Context, req session.ExecRequest) (*session.Result, error) {
	name := req.Host
	if name == "" {
		name = m.DefaultHost
	}
	req.Host = ""
	if name == "local" {
		name = ""
	}
	var svc session.Service = m.Local
	if name != "" {
		h, err := m.host(name)
		if err != nil {
			return nil, err
		}
		svc = h
	}
	m.refresh(name)
	r, err := svc.Exec(ctx, req)
	if r != nil {
		m.finish(name, &r.SessionID, &r.Notices)
	}
	return r, err
}

// Write implements session.Service.
func (m *Multi) Write(ctx context.Context, req session.WriteRequest) (*session.Result, error) {
	svc, name := m.at(&req.SessionID)
	r, err := svc.Write(ctx, req)
	if r != nil {
		m.finish(name, &r.SessionID, &r.Notices)
	}
	return r, err
}

// AskHuman implements session.Asker.
func (m *Multi) AskHuman(ctx context.Context, req session.AskRequest) (*session.AskResult, error) {
	svc, name := m.at(&req.SessionID)
	a, ok := svc.(session.Asker)
	if !ok {
		return nil, fmt.Errorf("%w: this ptyhub cannot ask for a person", session.ErrInvalid)
	}
	r, err := a.AskHuman(ctx, req)
	if r != nil {
		m.finish(name, &r.SessionID, &r.Notices)
	}
	return r, err
}

// Read implements session.Service.
func (m *Multi) Read(ctx context.Context, req session.ReadRequest) (*session.Result, error) {
	svc, name := m.at(&req.SessionID)
	r, err := svc.Read(ctx, req)
	if r != nil {
		m.finish(name, &r.SessionID, &r.Notices)
	}
	return r, err
}

// Kill implements session.Service.
func (m *Multi) Kill(ctx context.Context, req session.KillRequest) (*session.KillResult, error) {
	svc, name := m.at(&req.SessionID)
	r, err := svc.Kill(ctx, req)
	if r != nil {
		m.finish(name, &r.SessionID, &r.Notices)
	}
	return r, err
}

// Resize implements session.Service.
func (m *Multi) Resize(ctx context.Context, req session.ResizeRequest) (*session.ResizeResult, error) {
	svc, name := m.at(&req.SessionID)
	r, err := svc.Resize(ctx, req)
	if r != nil {
		m.finish(name, &r.SessionID, &r.Notices)
	}
	return r, err
}

// Wait implements session.Service. Sessions of one machine are waited on there; sessions
// of several (or, without ids, the sessions of every machine used) are waited on at
// once on each, and the first event wins: the other waits are cancelled, and one that
// had an event too is reported in a warning with its output, so none is lost.
func (m *Multi) Wait(ctx context.Context, req session.WaitRequest) (*session.WaitResult, error) {
	type group struct {
		name string
		svc  session.Service
		ids  []string
	}
	var groups []*group
	byName := map[string]*group{}
	add := func(name string, svc session.Service, id string) {
		g := byName[name]
		if g == nil {
			g = &group{name: name, svc: svc}
			byName[name] = g
			groups = append(groups, g)
		}
		if id != "" {
			g.ids = append(g.ids, id)
		}
	}
	if len(req.SessionIDs) == 0 {
		add("", m.Local, "")
		for _, n := range m.Hosts() {
			h, _ := m.host(n)
			add(n, h, "")
		}
	}
	for _, full := range req.SessionIDs {
		svc, name, id := m.route(full)
		add(name, svc, id)
	}
	targets := make([]session.WaitTarget, len(groups))
	for i, g := range groups {
		targets[i] = session.WaitTarget{Name: orLocal(g.name), Svc: g.svc, IDs: g.ids, Fix: func(r *session.WaitResult) {
			if g.name == "" {
				return
			}
			r.SessionID = prefix(g.name, r.SessionID)
			prefixNotices(g.name, &r.Notices)
			for i := range r.Others {
				r.Others[i].SessionID = prefix(g.name, r.Others[i].SessionID)
			}
		}}
	}
	if len(groups) == 1 {
		m.refresh(groups[0].name)
	}
	r, err := session.WaitFirst(ctx, req, targets)
	if r != nil {
		m.drain(&r.Notices)
	}
	return r, err
}

func orLocal(name string) string {
	if name == "" {
		return "this machine"
	}
	return "host " + name
}

// List implements session.Service: the local sessions, then those of every host used
// so far (asked at once); a host that cannot be reached is a warning, not an error.
func (m *Multi) List(ctx context.Context) (*session.ListResult, error) {
	m.mu.Lock()
	names := append([]string(nil), m.order...)
	hosts := make([]*Host, len(names))
	for i, n := range names {
		hosts[i] = m.hosts[n]
	}
	m.mu.Unlock()
	type answer struct {
		r   *session.ListResult
		err error
	}
	answers := make([]answer, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			r, err := h.List(ctx)
			answers[i] = answer{r, err}
		})
	}
	res, err := m.Local.List(ctx)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	for i, a := range answers {
		if a.err != nil {
			res.AddWarning(fmt.Sprintf("host %s: %v", names[i], a.err))
			continue
		}
		for _, in := range a.r.Sessions {
			in.SessionID = prefix(names[i], in.SessionID)
			res.Sessions = append(res.Sessions, in)
		}
		prefixNotices(names[i], &a.r.Notices)
		res.EndedSinceLastCall = append(res.EndedSinceLastCall, a.r.EndedSinceLastCall...)
		for _, w := range a.r.Warnings {
			res.AddWarning(fmt.Sprintf("host %s: %s", names[i], w))
		}
	}
	m.drain(&res.Notices)
	return res, nil
}

// Hosts returns the names of the hosts used so far, sorted.
// Watch implements session.Service for the local sessions only: sessions of other
// hosts are not followed as resources.
func (m *Multi) Watch(ctx context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	return m.Local.Watch(ctx, req)
}

func (m *Multi) Hosts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := append([]string(nil), m.order...)
	sort.Strings(names)
	return names
}

// Close closes every host connection (their owned sessions end there unless keep). It
// does not close Local.
func (m *Multi) Close(ctx context.Context, keep bool) error {
	m.mu.Lock()
	hosts := make([]*Host, 0, len(m.hosts))
	for _, h := range m.hosts {
		hosts = append(hosts, h)
	}
	m.mu.Unlock()
	var errs []error
	for _, h := range hosts {
		if err := h.Close(ctx, keep); err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", h.target.Name, err))
		}
	}
	return errors.Join(errs...)
}

var (
	_ session.Service = (*Host)(nil)
	_ session.Service = (*Multi)(nil)
)
