// Package route is the one way to every session of a user, wherever it runs: this
// process's sessions (Local), those of the other processes of the user on this machine
// (the per-user server, each `ptyhub mcp` that hosts its own) and those on other
// machines (hosts reached over ssh, docker exec, …). A Router implements
// session.Service over them; a Peer is one connection to another process or machine,
// made again after it dropped. The sources of peers live where their dialling does
// (server: the agents' sockets; remote: the hosts an agent names; cmd/ptyhub: the
// per-user server); this package knows only session.Service and a connection's end.
package route

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// Conn is one connection to a ptyhub server (a server.Client).
type Conn interface {
	session.Service
	// Done is closed when the connection has ended.
	Done() <-chan struct{}
	// Abandon ends the connection without a goodbye (the server keeps what it owns for
	// its grace period).
	Abandon()
}

// closer is a Conn that can say goodbye (server.Client).
type closer interface {
	Close(ctx context.Context, keep bool) error
}

// Peer is one long-lived connection to another ptyhub server, shared by every call, made
// on first use and made again on the next call after it dropped. It implements
// session.Service and session.Asker. A call in flight when the connection drops returns
// an error (it is not repeated: it may have had its effect); the sessions there go on.
type Peer struct {
	// Name names it in warnings and errors: "host ssh://box", "ptyhub mcp (pid 12)",
	// "the ptyhub server".
	Name string
	// Dial makes the connection.
	Dial func(ctx context.Context) (Conn, error)
	// Look, when set, makes the connection for a call that only looks (Watch): one that
	// starts nothing (no server). Nil: looking uses only a live connection.
	Look func(ctx context.Context) (Conn, error)
	// Raw, when set, opens a new connection of its own to the same server, for relaying
	// an attach or logs connection byte for byte.
	Raw func(ctx context.Context) (net.Conn, error)
	// Lost reports whether a call's error says the connection dropped during it.
	Lost func(error) bool

	mu      sync.Mutex
	c       Conn
	dropped bool        // a connection was lost since the last successful dial
	dials   [2]*dialing // the dial in flight, of Dial and of Look
	closed  bool
	// lookErr is the error of the last Look that failed, given to looks without dialling
	// again until lookUntil (see lookQuiet).
	lookErr   error
	lookUntil time.Time
}

// lookQuiet is how long a failed Look is remembered: a watch asks every member again on
// each change of its own sessions (an agent's: each start, exit and removal), and with
// no server running each of those dialled it in vain, beside the exec that made the
// change. A watch asks a member that failed again after watchRetry in any case, so a
// server started meanwhile is seen as soon as before. A variable for tests.
var lookQuiet = watchRetry

// dialing is one dial in flight, which every call that needs the connection shares.
type dialing struct {
	done chan struct{} // closed when c and err are set
	c    Conn
	err  error
}

// dialTimeout bounds a dial: a transport (ssh) may take longer to connect than the call
// that needed it waits (a listing's few seconds), so the dial goes on for the next call.
const dialTimeout = 30 * time.Second

// errNotConnected is what a looking call gets from a peer it may not dial.
var errNotConnected = errors.New("not connected")

// Connected reports whether the peer has a live connection, without making one.
func (p *Peer) Connected() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.c != nil && !ended(p.c)
}

func ended(c Conn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// get returns the live connection, connecting when there is none (with Look when look);
// reconnected says the connection was made again after one dropped. The dial is shared
// by every call that needs it and goes on (within dialTimeout) when ctx ends first.
func (p *Peer) get(ctx context.Context, look bool) (c Conn, reconnected bool, err error) {
	p.mu.Lock()
	if p.c != nil {
		if !ended(p.c) {
			defer p.mu.Unlock()
			return p.c, false, nil
		}
		p.c.Abandon() // ends the transport
		p.c, p.dropped = nil, true
	}
	kind, dial := 0, p.Dial
	if look {
		kind, dial = 1, p.Look
		if p.lookErr != nil && time.Now().Before(p.lookUntil) {
			err := p.lookErr
			p.mu.Unlock()
			return nil, false, err
		}
	}
	if dial == nil {
		p.mu.Unlock()
		return nil, false, fmt.Errorf("%s: %w", p.Name, errNotConnected)
	}
	d := p.dials[kind]
	if d == nil {
		d = &dialing{done: make(chan struct{})}
		p.dials[kind] = d
		// The dialler: owned by the Peer, ends within dialTimeout.
		go func() {
			dctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
			c, err := dial(dctx)
			cancel()
			p.mu.Lock()
			p.dials[kind] = nil
			switch {
			case err != nil && kind == 1:
				p.lookErr, p.lookUntil = err, time.Now().Add(lookQuiet)
			case err != nil:
			case p.closed:
				c.Abandon()
				c, err = nil, fmt.Errorf("%s: %w", p.Name, errNotConnected)
			case p.c != nil && !ended(p.c): // the other kind of dial came first
				c.Abandon()
				c = p.c
			default:
				p.c, p.lookErr = c, nil
			}
			d.c, d.err = c, err
			p.mu.Unlock()
			close(d.done)
		}()
	}
	dropped := p.dropped
	p.mu.Unlock()
	select {
	case <-d.done:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	if d.err != nil {
		return nil, false, d.err
	}
	p.mu.Lock()
	if p.c == d.c {
		p.dropped = false
	}
	p.mu.Unlock()
	return d.c, dropped, nil
}

// quietLook returns the error a Watch of p would return at once, without dialling or
// waiting: that of its last failed Look while it is remembered (lookQuiet) and p has no
// live connection. Nil: a Watch would look or use the connection.
func (p *Peer) quietLook() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil && !ended(p.c) || p.Look == nil || p.lookErr == nil || !time.Now().Before(p.lookUntil) {
		return nil
	}
	return p.lookErr
}

// forget drops c if it is still the current connection, so the next call connects again.
func (p *Peer) forget(c Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == c {
		p.c, p.dropped = nil, true
		c.Abandon() // the server keeps the sessions (no goodbye)
	}
}

// Client returns the live connection, connecting when there is none.
func (p *Peer) Client(ctx context.Context) (Conn, error) {
	c, _, err := p.get(ctx, false)
	return c, err
}

// on calls f on the peer's connection (see Peer for what a dropped connection does).
func on[Req, Res any](p *Peer, ctx context.Context, look bool, req Req, f func(session.Service, context.Context, Req) (Res, error)) (Res, error) {
	c, reconnected, err := p.get(ctx, look)
	if err != nil {
		var zero Res
		return zero, err
	}
	res, err := f(c, ctx, req)
	switch {
	case err == nil:
	case p.Lost != nil && p.Lost(err):
		p.forget(c)
		err = fmt.Errorf("the connection to %s dropped during the call (%v); its sessions keep running there and the next call reconnects", p.Name, err)
	case reconnected && errors.Is(err, session.ErrNotFound):
		// Say why a session the caller used is gone: the server there is a new one.
		err = fmt.Errorf("%w: the connection to %s had dropped since the previous call and was made again, and the ptyhub server there no longer has that session: the host, its container or its ptyhub server restarted, which ended the sessions there (%v)", session.ErrNotFound, p.Name, err)
	}
	return res, err
}

// Exec implements session.Service.
func (p *Peer) Exec(ctx context.Context, req session.ExecRequest) (*session.Result, error) {
	return on(p, ctx, false, req, session.Service.Exec)
}

// Write implements session.Service.
func (p *Peer) Write(ctx context.Context, req session.WriteRequest) (*session.Result, error) {
	return on(p, ctx, false, req, session.Service.Write)
}

// Read implements session.Service.
func (p *Peer) Read(ctx context.Context, req session.ReadRequest) (*session.Result, error) {
	return on(p, ctx, false, req, session.Service.Read)
}

// List implements session.Service.
func (p *Peer) List(ctx context.Context) (*session.ListResult, error) {
	return on(p, ctx, false, struct{}{}, list)
}

func list(svc session.Service, ctx context.Context, _ struct{}) (*session.ListResult, error) {
	return svc.List(ctx)
}

// Kill implements session.Service.
func (p *Peer) Kill(ctx context.Context, req session.KillRequest) (*session.KillResult, error) {
	return on(p, ctx, false, req, session.Service.Kill)
}

// Resize implements session.Service.
func (p *Peer) Resize(ctx context.Context, req session.ResizeRequest) (*session.ResizeResult, error) {
	return on(p, ctx, false, req, session.Service.Resize)
}

// Wait implements session.Service.
func (p *Peer) Wait(ctx context.Context, req session.WaitRequest) (*session.WaitResult, error) {
	return on(p, ctx, false, req, session.Service.Wait)
}

// Watch implements session.Service. It only looks: it connects with Look, or uses the
// live connection when the peer has no Look.
func (p *Peer) Watch(ctx context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	return on(p, ctx, true, req, session.Service.Watch)
}

// AskHuman implements session.Asker.
func (p *Peer) AskHuman(ctx context.Context, req session.AskRequest) (*session.AskResult, error) {
	return on(p, ctx, false, req, askHuman)
}

// askHuman asks svc for a person, when it can.
func askHuman(svc session.Service, ctx context.Context, req session.AskRequest) (*session.AskResult, error) {
	a, ok := svc.(session.Asker)
	if !ok {
		return nil, fmt.Errorf("%w: this ptyhub cannot ask for a person", session.ErrInvalid)
	}
	return a.AskHuman(ctx, req)
}

// Close says goodbye to the server (sessions this connection owns end there, unless
// keep) and ends the connection; without a connection it does nothing.
func (p *Peer) Close(ctx context.Context, keep bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.c
	p.c, p.closed = nil, true
	if c == nil {
		return nil
	}
	if cl, ok := c.(closer); ok && !ended(c) {
		return cl.Close(ctx, keep)
	}
	c.Abandon()
	return nil
}

// Abandon ends the connection without a goodbye.
func (p *Peer) Abandon() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.c != nil {
		p.c.Abandon()
		p.c = nil
	}
}

var (
	_ session.Service = (*Peer)(nil)
	_ session.Asker   = (*Peer)(nil)
)
