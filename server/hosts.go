package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ptyhub/ptyhub/route"
	"github.com/ptyhub/ptyhub/session"
)

// Session hosts. `ptyhub mcp` runs its agent's sessions in its own process, so a tool
// call crosses one process boundary (agent → ptyhub mcp) instead of two (→ the server),
// and serves them to the rest of the user's world on a socket of its own next to the
// server's: HostSocket(server socket, its pid), speaking this package's protocol (a
// Server over its own manager, made by ListenHost). The server finds the host sockets
// there (hostSet) and folds their sessions into what it serves: a listing has them, a
// call naming one of them goes to its host, an attach or logs connection is relayed. So
// `ptyhub ls`, `attach`, `write`, `logs`… see an agent's sessions as they see the
// server's own, and nothing on the agent's path waits for the server.

// hostInfix separates the server socket's path from a host's pid in a host socket's name.
const hostInfix = ".host-"

// HostSocket returns the socket on which process pid serves the sessions it hosts, for
// the server listening on socket (default SocketPath()).
func HostSocket(socket string, pid int) string {
	if socket == "" {
		socket = SocketPath()
	}
	return socket + hostInfix + strconv.Itoa(pid)
}

// ListenHost listens on HostSocket(opts.Socket, this process's pid) and returns a Server
// of mgr's sessions there, for the per-user server to reach them (see above). The
// directory is prepared and checked as Listen does; there is no lock file (the pid in the
// name is the instance: a file of that name is left over from a dead process and is
// replaced). Serve removes the socket when it returns. opts.IdleExit is ignored.
func ListenHost(mgr *session.Manager, opts Options) (*Server, error) {
	server := opts.Socket
	if server == "" {
		server = SocketPath()
	}
	path := HostSocket(server, os.Getpid())
	if len(path) > maxSunPath {
		return nil, fmt.Errorf("server: host socket path %s is %d bytes, longer than the %d a Unix socket allows", path, len(path), maxSunPath)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := prepareDir(filepath.Dir(path), server == defaultSocketPath()); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("server: remove a stale host socket: %w", err)
	}
	ln, err := listenPrivate(path) // Serve unlinks it
	if err != nil {
		return nil, err
	}
	opts.Socket, opts.IdleExit = path, 0
	return newServer(mgr, opts, ln), nil
}

// hostHandshake bounds a handshake with a host: a stopped ptyhub mcp (the agent was
// suspended) must not hold up `ptyhub ls` for long.
const hostHandshake = 2 * time.Second

// hostCallTimeout bounds one call to a host on behalf of a status.
const hostCallTimeout = 5 * time.Second

// hostSet is the server's view of the session hosts next to its socket: one route.Peer
// to each (a connection made when first needed and made again after it dropped).
type hostSet struct {
	socket string // the server's socket

	mu    sync.Mutex
	peers map[string]*route.Peer // host socket → its peer
}

// hostPID returns the pid in a host socket's name (0: not a host socket of socket).
func hostPID(socket, path string) int {
	rest, ok := strings.CutPrefix(path, socket+hostInfix)
	if !ok {
		return 0
	}
	pid, err := strconv.Atoi(rest)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != rest {
		return 0
	}
	return pid
}

// members returns a peer for every host socket next to the server's, in pid order (a
// route.Router's Members). A peer whose process is gone removes its socket when dialled.
func (h *hostSet) members(context.Context) ([]route.Member, []string) {
	dir := filepath.Dir(h.socket)
	ents, _ := os.ReadDir(dir)
	type found struct {
		path string
		pid  int
	}
	var socks []found
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		if pid := hostPID(h.socket, path); pid > 0 && pid != os.Getpid() {
			socks = append(socks, found{path, pid})
		}
	}
	sort.Slice(socks, func(i, j int) bool { return socks[i].pid < socks[j].pid })
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.peers == nil {
		h.peers = map[string]*route.Peer{}
	}
	live := map[string]bool{}
	var ms []route.Member
	for _, s := range socks {
		live[s.path] = true
		p := h.peers[s.path]
		if p == nil {
			p = hostPeer(s.path, s.pid)
			h.peers[s.path] = p
		}
		ms = append(ms, route.Member{Name: p.Name, Svc: p})
	}
	for path, p := range h.peers { // hosts that went away
		if !live[path] {
			delete(h.peers, path)
			go p.Abandon()
		}
	}
	return ms, nil
}

// hostPeer is the peer of the host socket at path, served by process pid.
func hostPeer(path string, pid int) *route.Peer {
	name := fmt.Sprintf("ptyhub mcp (pid %d)", pid)
	dial := func(ctx context.Context) (route.Conn, error) {
		c, err := dialHost(ctx, path)
		if err != nil {
			if syscall.Kill(pid, 0) == syscall.ESRCH {
				os.Remove(path) // left by a process that died
			}
			return nil, fmt.Errorf("hosts sessions that cannot be listed: %w", err)
		}
		return c, nil
	}
	return &route.Peer{Name: name, Dial: dial, Look: dial, Lost: lost,
		Raw: func(ctx context.Context) (net.Conn, error) { return dialHostSocket(ctx, path) }}
}

// lost reports whether err says a client's connection dropped during a call.
func lost(err error) bool { return errors.Is(err, ErrConnLost) }

// dialHost connects to a host socket as a service client (no sessions of its own there).
func dialHost(ctx context.Context, path string) (*Client, error) {
	nc, err := dialHostSocket(ctx, path)
	if err != nil {
		return nil, err
	}
	w, err := handshakeWithin(nc, &hello{Protocol: Protocol, Build: Build(), Mode: ModeService, Name: "server"}, hostHandshake)
	if err != nil {
		nc.Close()
		return nil, err
	}
	cl := &Client{c: nc, welcome: w, pending: map[uint64]chan *frame{}, done: make(chan struct{})}
	go cl.readLoop()
	return cl, nil
}

// dialHostSocket connects to the host socket at path and checks that the host runs as
// this user (checkPeer) before anything is sent: the socket directory may be one others
// can write to (an explicit --socket), and a listing or an attach must not reach them.
func dialHostSocket(ctx context.Context, path string) (*net.UnixConn, error) {
	d := net.Dialer{Timeout: hostHandshake}
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	uc := nc.(*net.UnixConn)
	if _, err := checkPeer(uc, path); err != nil {
		uc.Close()
		return nil, err
	}
	return uc, nil
}

// close ends every host connection.
func (h *hostSet) close() {
	h.mu.Lock()
	peers := h.peers
	h.peers = nil
	h.mu.Unlock()
	for _, p := range peers {
		p.Abandon()
	}
}

// hostStatuses asks every host for its status (each within hostCallTimeout).
func (s *Server) hostStatuses(ctx context.Context) []Status {
	if s.hosts == nil {
		return nil
	}
	members, _ := s.hosts.members(ctx)
	out := make([]*Status, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, hostCallTimeout)
			defer cancel()
			c, err := m.Svc.(*route.Peer).Client(sctx)
			if cl, ok := c.(*Client); ok && err == nil {
				if st, err := cl.Status(sctx); err == nil {
					out[i] = st
				}
			}
		})
	}
	wg.Wait()
	var sts []Status
	for _, st := range out {
		if st != nil {
			sts = append(sts, *st)
		}
	}
	return sts
}

// router returns what a connection whose own client is local serves: local's sessions,
// then those of the processes (and hosts) the server reaches (route.Router).
func (s *Server) router(local session.Service) *route.Router {
	r := &route.Router{Local: local, Host: s.opts.Host, LocalWatch: true}
	switch {
	case s.opts.Members != nil:
		r.Members = s.opts.Members
	case s.hosts != nil:
		r.Members = s.hosts.members
	}
	return r
}

// relay serves a connection whose hello (hf, decoded as h) names session id, which this
// server does not have, by the process or host that has it: it opens a connection of its
// own there (route.Peer.Raw), sends it the same hello (naming the session by its id
// there) and copies frames both ways until either side ends. It reports false (having
// done nothing) when nobody has the session.
func (s *Server) relay(c *net.UnixConn, hf *frame, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), hostCallTimeout)
	defer cancel()
	m, there, err := s.router(nil).Locate(ctx, id)
	if err != nil || m == nil {
		return false
	}
	p, ok := m.Svc.(*route.Peer)
	if !ok || p.Raw == nil {
		return false
	}
	if there != id {
		var h hello
		if json.Unmarshal(hf.Body, &h) != nil {
			return false
		}
		if h.Logs != nil {
			h.Logs.ID = there
		} else {
			h.Session = there
		}
		body, err := json.Marshal(h)
		if err != nil {
			return false
		}
		hf = &frame{ID: hf.ID, Op: hf.Op, Body: body}
	}
	up, err := p.Raw(ctx)
	if err != nil {
		return false
	}
	defer up.Close()
	if err := writeFrame(up, hf); err != nil {
		return false
	}
	// Two copiers: each ends when its source ends, and closing both connections (when
	// the first ends) ends the other.
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	up.Close()
	c.Close()
	<-done
	return true
}
