package server

import (
	"context"
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

// hostCallTimeout bounds one call to a host on behalf of a listing or a lookup.
const hostCallTimeout = 5 * time.Second

// hostSet is the server's view of the session hosts next to its socket: one connection
// to each, made when first needed and made again after it dropped.
type hostSet struct {
	socket string // the server's socket

	mu    sync.Mutex
	conns map[string]*Client // host socket → connection
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

// members returns a connection to every host that answers, in pid order, and warnings
// about those that did not. A socket whose process is gone is removed.
func (h *hostSet) members(ctx context.Context) ([]Member, []string) {
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
	if h.conns == nil {
		h.conns = map[string]*Client{}
	}
	live := map[string]bool{}
	for _, s := range socks {
		live[s.path] = true
	}
	for path, c := range h.conns { // hosts that went away
		if !live[path] {
			delete(h.conns, path)
			go c.Abandon()
		}
	}
	h.mu.Unlock()
	out := make([]Member, len(socks))
	warns := make([]string, len(socks))
	var wg sync.WaitGroup
	for i, s := range socks {
		wg.Go(func() {
			c, err := h.conn(ctx, s.path)
			name := fmt.Sprintf("ptyhub mcp (pid %d)", s.pid)
			if err != nil {
				if syscall.Kill(s.pid, 0) == syscall.ESRCH {
					os.Remove(s.path) // left by a process that died
					return
				}
				warns[i] = fmt.Sprintf("%s hosts sessions that cannot be listed: %v", name, err)
				return
			}
			out[i] = Member{Name: name, Svc: c}
		})
	}
	wg.Wait()
	var ms []Member
	for _, m := range out {
		if m.Svc != nil {
			ms = append(ms, m)
		}
	}
	var ws []string
	for _, w := range warns {
		if w != "" {
			ws = append(ws, w)
		}
	}
	return ms, ws
}

// conn returns the connection to the host at path, dialling it when there is none or it
// dropped.
func (h *hostSet) conn(ctx context.Context, path string) (*Client, error) {
	h.mu.Lock()
	c := h.conns[path]
	h.mu.Unlock()
	if c != nil {
		select {
		case <-c.Done():
		default:
			return c, nil
		}
	}
	c, err := dialHost(ctx, path)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.conns[path]; old != nil && old != c {
		select {
		case <-old.Done():
		default: // another call dialled it meanwhile: keep that one
			go c.Abandon()
			return old, nil
		}
	}
	h.conns[path] = c
	return c, nil
}

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
	conns := h.conns
	h.conns = nil
	h.mu.Unlock()
	for _, c := range conns {
		c.Abandon()
	}
}

// locate returns the first of members that has session id (a short id, UUID prefix or
// name): nil when none has it, an error when it names different sessions in several (a
// name two agents gave). One session seen through two members (a host's session as the
// server lists it) is one session.
func locate(ctx context.Context, members []Member, id string) (*Member, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, nil
	}
	hits := make([]string, len(members)) // the UUID each member has under id
	for i, a := range listEach(ctx, members) {
		if a.err != nil {
			continue
		}
		for _, in := range a.r.Sessions {
			if sessionIs(in, id) {
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

// sessionIs reports whether id (a short id, a UUID or unique prefix, or a name) names in.
func sessionIs(in session.Info, id string) bool {
	if _, err := strconv.Atoi(id); err == nil {
		return in.SessionID == id
	}
	return in.Name == id || strings.HasPrefix(in.UUID, strings.ToLower(id))
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
		c, ok := m.Svc.(*Client)
		if !ok {
			continue
		}
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, hostCallTimeout)
			defer cancel()
			if st, err := c.Status(sctx); err == nil {
				out[i] = st
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

// relay serves a connection whose hello (hf) names session id, which this server does
// not have, by the host that has it: it dials the host, sends it the same hello and
// copies frames both ways until either side ends. It reports false (having done
// nothing) when no host has the session.
func (s *Server) relay(c *net.UnixConn, hf *frame, id string) bool {
	if s.hosts == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostCallTimeout)
	members, _ := s.hosts.members(ctx)
	m, err := locate(ctx, members, id)
	cancel()
	if err != nil || m == nil {
		return false
	}
	hc, ok := m.Svc.(*Client)
	if !ok {
		return false
	}
	dctx, cancel := context.WithTimeout(context.Background(), hostHandshake)
	up, err := dialHostSocket(dctx, hc.c.RemoteAddr().String())
	cancel()
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
