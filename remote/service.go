package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/ptyhub/ptyhub/route"
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

// peer returns the route.Peer that reaches t: one connection, made on first use and
// again after it dropped; a relay opens a transport of its own.
func peer(t Target, o Options) *route.Peer {
	opts := DialOptions(t, o)
	return &route.Peer{
		Name: "host " + t.Name,
		Dial: func(ctx context.Context) (route.Conn, error) { return server.Dial(ctx, opts) },
		Raw:  func(ctx context.Context) (net.Conn, error) { return Dial(ctx, t) },
		Lost: func(err error) bool { return errors.Is(err, server.ErrConnLost) },
	}
}

// Hosts are the machines an agent names (exec_command's host, HOST:ID ids), each reached
// over one route.Peer made on first use: a route.Router's Host and Members. A Hosts
// made by Seen reaches the same hosts over connections of its own.
type Hosts struct {
	// Options reach the hosts; Token defaults to a random one per Hosts (when Own).
	Options Options

	of    *Hosts // Seen: the hosts named are of's
	mu    sync.Mutex
	peers map[string]*route.Peer
	order []string
}

// Host returns the member that reaches host name (a URL or a hosts.json name),
// resolving it on first use.
func (h *Hosts) Host(name string) (route.Member, error) {
	if h.of != nil && !slices.Contains(h.of.Names(), name) {
		return route.Member{}, fmt.Errorf("%w: host %q is not one this agent uses", session.ErrInvalid, name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.peers[name]; p != nil {
		return route.Member{Name: p.Name, Prefix: name, Svc: p}, nil
	}
	t, err := Resolve(name, h.Options.Getenv)
	if err != nil {
		return route.Member{}, fmt.Errorf("%w: %v", session.ErrInvalid, err)
	}
	if h.peers == nil {
		h.peers = map[string]*route.Peer{}
	}
	if h.Options.Own && h.Options.Token == "" {
		h.Options.Token = NewToken()
	}
	p := peer(t, h.Options)
	h.peers[name] = p
	h.order = append(h.order, name)
	return route.Member{Name: p.Name, Prefix: name, Svc: p}, nil
}

// Names returns the names of the hosts used so far, in the order of first use.
func (h *Hosts) Names() []string {
	if h.of != nil {
		return h.of.Names()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.order)
}

// Members returns the hosts used so far (a route.Router's Members).
func (h *Hosts) Members(context.Context) ([]route.Member, []string) {
	var ms []route.Member
	for _, n := range h.Names() {
		if m, err := h.Host(n); err == nil {
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// Seen returns the same hosts, reached over connections of their own that own nothing:
// what an agent's host socket shows the per-user server (its listings must not take the
// agent's notices of ended sessions).
func (h *Hosts) Seen() *Hosts {
	return &Hosts{of: h, Options: Options{Name: "server", Getenv: h.Options.Getenv}}
}

// Close closes every host connection (their owned sessions end there unless keep).
func (h *Hosts) Close(ctx context.Context, keep bool) error {
	h.mu.Lock()
	peers := maps.Clone(h.peers)
	h.mu.Unlock()
	var errs []error
	for name, p := range peers {
		if err := p.Close(ctx, keep); err != nil {
			errs = append(errs, fmt.Errorf("host %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
