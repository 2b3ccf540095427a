// Package server is ptyhub's per-user server and its client. The server owns a
// session.Manager and serves it on a Unix socket to every CLI command and `ptyhub mcp`,
// as tmux does; Client implements session.Service over that socket, so the MCP layer
// does not care whether it talks to the server or to an in-process manager.
//
// Security: the socket directory is created 0700 and checked (owner, mode, not a
// symlink), the socket is 0600, and every connection's peer uid (SO_PEERCRED) must be the
// server's. A lock file next to the socket keeps one server per socket; a stale socket
// (nobody listening) is replaced, a live one never.
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
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/route"
	"github.com/ptyhub/ptyhub/session"
)

// Limits of the server.
const (
	// handshakeTimeout bounds the time a new connection has to send its hello.
	handshakeTimeout = 5 * time.Second
	// writeTimeout bounds one write to a client; a client that does not read for that
	// long is dropped (it never slows a session: the hub does not wait for it).
	writeTimeout = 30 * time.Second
	// maxConns caps simultaneous connections.
	maxConns = 1024
)

// ErrRunning is returned by Listen when a live server already holds the socket.
var ErrRunning = errors.New("a ptyhub server is already running")

// Options configure a Server.
type Options struct {
	// Socket is the socket path (default SocketPath()).
	Socket string
	// IdleExit: Serve returns after this long with no client connected and no running
	// session (0: never).
	IdleExit time.Duration
	// Logger receives operational logs (default: discard).
	Logger *slog.Logger
	// Version is reported to clients.
	Version string
	// Grace is how long the sessions of an owning connection that carried a token
	// (a remote agent, see DialOptions.Token) outlive its unannounced end, waiting for
	// the client to come back (default 60 s).
	Grace time.Duration
	// Web is the browser view the server starts when a client asks (ptyhub web) and
	// closes when Serve returns (nil: the server has none).
	Web WebView
	// Members and Host are what every connection reaches beyond the manager's sessions
	// (a route.Router's). Listen's default Members are the session hosts next to its
	// socket; a ptyhub mcp's ListenHost passes the hosts its agent reaches.
	Members func(ctx context.Context) ([]route.Member, []string)
	Host    func(name string) (route.Member, error)
}

// WebView is a browser view of the server's sessions (package web).
type WebView interface {
	// Start listens on listen (host:port; "" for the default) unless already listening
	// and returns the page's URL with its token.
	Start(listen string) (url string, err error)
	// Close stops listening and ends the page's connections.
	Close() error
}

// DefaultGrace is Options.Grace's default.
const DefaultGrace = 60 * time.Second

// claim is the session.Client of one token, shared by that token's connections.
type claim struct {
	client *session.Client
	conns  int         // connections holding it
	timer  *time.Timer // the grace period, while no connection holds it
}

// Server serves a session.Manager on a Unix socket. Create it with Listen, run it with
// Serve.
type Server struct {
	mgr  *session.Manager
	opts Options
	log  *slog.Logger
	ln   *net.UnixListener
	lock *os.File

	started time.Time

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	last    time.Time // when the last connection closed (for the idle exit)
	closing bool
	wg      sync.WaitGroup // connection goroutines
	claims  map[string]*claim

	// hosts are the processes hosting sessions next to this server's socket (hosts.go);
	// nil in a host's own server.
	hosts *hostSet
}

// Listen prepares the socket directory, takes the single-instance lock (the lock file
// socket+".lock" holds the server's pid), replaces a stale socket, and listens. It
// returns an error wrapping ErrRunning when another server holds the lock or answers on
// the socket. The caller must Serve (or Close) the server.
func Listen(mgr *session.Manager, opts Options) (*Server, error) {
	if opts.Socket == "" {
		opts.Socket = SocketPath()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	path := opts.Socket
	if len(path) > maxSunPath {
		return nil, fmt.Errorf("server: socket path %s is %d bytes, longer than the %d a Unix socket allows; choose a shorter --socket", path, len(path), maxSunPath)
	}
	if err := prepareDir(filepath.Dir(path), path == defaultSocketPath()); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("server: lock file: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path + ".lock")
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w on %s (pid %s)", ErrRunning, path, trimSpace(b))
		}
		return nil, fmt.Errorf("server: lock %s: %w", path+".lock", err)
	}
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	// We hold the lock: a socket file left behind is stale unless something still answers
	// on it (a server that does not use the lock); never unlink a live one.
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		lock.Close()
		return nil, fmt.Errorf("%w on %s (it does not hold the lock file)", ErrRunning, path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		lock.Close()
		return nil, fmt.Errorf("server: remove stale socket: %w", err)
	}
	ln, err := listenPrivate(path)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s := newServer(mgr, opts, ln)
	s.lock, s.hosts = lock, &hostSet{socket: path}
	return s, nil
}

// listenPrivate listens on a new socket at path, mode 0600. The caller unlinks it. The
// umask is process-wide; this runs before any other goroutine of ours creates files. The
// socket is made 0600 at bind time, and chmod-ed again to be sure.
func listenPrivate(path string) (*net.UnixListener, error) {
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("server: listen: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fmt.Errorf("server: chmod socket: %w", err)
	}
	return ln, nil
}

// newServer returns a server of mgr on ln (opts.Socket is ln's path).
func newServer(mgr *session.Manager, opts Options, ln *net.UnixListener) *Server {
	return &Server{mgr: mgr, opts: opts, started: time.Now(), log: opts.Logger, ln: ln,
		conns: map[net.Conn]struct{}{}, last: time.Now(), claims: map[string]*claim{}}
}

func trimSpace(b []byte) string {
	s := string(b)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	if s == "" {
		return "unknown"
	}
	return s
}

// Path returns the socket path.
func (s *Server) Path() string { return s.opts.Socket }

// Serve accepts connections until ctx is done or the server has been idle (no client, no
// running session) for Options.IdleExit. It then stops accepting, removes the socket,
// closes every connection (sessions owned by a connection end, see hello.Own), waits for
// the connection goroutines (at most 10 s) and releases the lock. It does not close the
// manager: the caller does, which ends every session. It returns nil after an idle exit,
// else context.Cause(ctx).
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := errors.New("idle")
	if s.opts.IdleExit > 0 {
		// The idle watcher: owned by Serve, stops when ctx is done.
		go s.watchIdle(ctx, func() { cancel(idle) })
	}
	// The acceptor: owned by Serve, stops when the listener is closed below.
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		var delay time.Duration
		for {
			c, err := s.ln.AcceptUnix()
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
					return
				}
				// Out of descriptors (EMFILE, ENFILE) or memory: the connection waits
				// in the backlog. Back off and try again, as net/http does; never end
				// the server (its sessions would end with it).
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "in", delay)
				select {
				case <-time.After(delay):
				case <-ctx.Done():
					return
				}
				continue
			}
			delay = 0
			s.startConn(c)
		}
	}()
	<-ctx.Done()
	s.mu.Lock()
	s.closing = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	os.Remove(s.opts.Socket)
	s.ln.Close()
	<-accepted
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.log.Warn("connections still closing after 10 s")
	}
	s.mu.Lock()
	for tok, cl := range s.claims {
		if cl.timer != nil && cl.timer.Stop() {
			delete(s.claims, tok)
			cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			cl.client.Close(cctx, false)
			cancel()
		}
	}
	s.mu.Unlock()
	if s.hosts != nil {
		s.hosts.close()
	}
	if s.opts.Web != nil {
		s.opts.Web.Close()
	}
	if s.lock != nil {
		s.lock.Close()
	}
	if context.Cause(ctx) == idle {
		s.log.Info("idle: exiting")
		return nil
	}
	return context.Cause(ctx)
}

// watchIdle calls stop once no client has been connected and no session has run for
// IdleExit. It returns when ctx is done.
func (s *Server) watchIdle(ctx context.Context, stop func()) {
	tick := time.NewTicker(min(s.opts.IdleExit/4+time.Millisecond, time.Second))
	defer tick.Stop()
	lister := s.mgr.NewClient("idle")
	var quietSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		n, last := len(s.conns), s.last
		s.mu.Unlock()
		s.mu.Lock()
		busy := n > 0 || len(s.claims) > 0
		s.mu.Unlock()
		if !busy {
			if l, err := lister.List(ctx); err == nil {
				for _, in := range l.Sessions {
					busy = busy || in.State == session.StateRunning
				}
			}
		}
		if busy {
			quietSince = time.Time{}
			continue
		}
		if quietSince.IsZero() {
			quietSince = time.Now()
			if last.After(quietSince) {
				quietSince = last
			}
		}
		if time.Since(quietSince) >= s.opts.IdleExit {
			stop()
			return
		}
	}
}

// startConn registers c and serves it on its own goroutine (owned by the server; it ends
// when the connection does, which Serve forces by closing it).
func (s *Server) startConn(c *net.UnixConn) {
	s.mu.Lock()
	if s.closing || len(s.conns) >= maxConns {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.conns[c] = struct{}{}
	n := len(s.conns)
	s.wg.Add(1)
	s.mu.Unlock()
	s.log.Debug("connection opened", "connections", n)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.log.Debug("connection closed")
			s.mu.Lock()
			delete(s.conns, c)
			s.last = time.Now()
			s.mu.Unlock()
			c.Close()
		}()
		s.serveConn(c)
	}()
}

// peerUID returns the uid of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid := -1
	var cerr error
	if err := raw.Control(func(fd uintptr) { uid, _, cerr = peerCred(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, cerr
}

// CheckPeer returns an error unless the peer of c runs as this process's uid. Identity
// the client claims is never trusted; root is not let in unless it is us.
func CheckPeer(c *net.UnixConn) error {
	uid, err := peerUID(c)
	if err != nil {
		return err
	}
	if uid != os.Getuid() {
		return fmt.Errorf("permission denied: the ptyhub server of uid %d does not serve uid %d", os.Getuid(), uid)
	}
	return nil
}

func (s *Server) serveConn(c *net.UnixConn) {
	if err := CheckPeer(c); err != nil {
		s.log.Warn("refused a connection", "err", err)
		c.SetWriteDeadline(time.Now().Add(time.Second))
		writeFrame(c, &frame{Op: opReply, Error: &wireError{Message: err.Error()}})
		return
	}
	c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	// A hello carries the caller's environment: allow as much as a process can have.
	f, err := readFrame(c, MaxFrame)
	if err != nil {
		return
	}
	c.SetReadDeadline(time.Time{})
	w := &Welcome{Protocol: Protocol, Build: Build(), PID: os.Getpid(), Version: s.opts.Version,
		ExeDeleted: exeDeleted(), Running: s.mgr.Running()}
	refuse := func(kind, msg string) {
		body, _ := json.Marshal(w)
		c.SetWriteDeadline(time.Now().Add(time.Second))
		writeFrame(c, &frame{Op: opReply, Body: body, Error: &wireError{Kind: kind, Message: msg}})
	}
	// The protocol number first, leniently: a client of another protocol learns ours.
	var v struct {
		Protocol int `json:"protocol"`
	}
	json.Unmarshal(f.Body, &v)
	if v.Protocol != Protocol {
		refuse(kindProtocol, fmt.Sprintf("the ptyhub server (pid %d, build %s) speaks protocol %d, the client protocol %d", w.PID, w.Build, Protocol, v.Protocol))
		return
	}
	var h hello
	if err := strictDecode(f.Body, &h); err != nil {
		refuse("invalid", "bad hello: "+err.Error())
		return
	}
	if h.Caller != nil {
		if err := h.Caller.Check(); err != nil {
			refuse("invalid", "bad hello: "+err.Error())
			return
		}
	}
	switch h.Mode {
	case ModeService:
		s.serveService(c, h, w)
	case ModeAttach:
		s.serveAttach(c, f, h, w)
	case ModeLogs:
		s.serveLogs(c, f, h, w)
	default:
		refuse("invalid", fmt.Sprintf("unknown mode %q", h.Mode))
	}
}

// sender serialises frames to one connection; a failed or timed-out write closes it.
type sender struct {
	mu sync.Mutex
	c  net.Conn
}

func (s *sender) send(f *frame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	err := writeFrame(s.c, f)
	if err != nil {
		s.c.Close()
	}
	return err
}

func reply(id uint64, body any) *frame {
	b, err := json.Marshal(body)
	if err != nil {
		return &frame{ID: id, Op: opReply, Error: toWire(err)}
	}
	return &frame{ID: id, Op: opReply, Body: b}
}

// serveService welcomes a service connection and serves its requests (serveRequests) on
// its session client. When the connection ends, the sessions it owns end, unless it is
// not an owning connection or said bye with keep; those of a connection with a token
// that drops without a bye wait out the grace period first.
func (s *Server) serveService(c *net.UnixConn, h hello, w *Welcome) {
	out := &sender{c: c}
	if out.send(reply(0, w)) != nil {
		return
	}
	// An owning connection (ptyhub mcp: one agent) has its own session limit; every
	// other connection (the CLI) counts in one shared pool.
	var caller session.Caller
	if h.Caller != nil {
		caller = *h.Caller // checked by serveConn
	}
	var client *session.Client
	token := ""
	if h.Own && h.Token != "" {
		token = h.Token
		client = s.takeClaim(token, func() *session.Client {
			c, _ := s.mgr.NewClientFor(h.Name, caller)
			return c
		})
	} else if h.Own {
		client, _ = s.mgr.NewClientFor(h.Name, caller)
	} else {
		client, _ = s.mgr.NewPoolClient(h.Name, cliPool, caller)
	}
	// The connection sees the sessions of the processes that host their own too.
	svc := s.router(client)
	keep := !h.Own
	s.serveRequests(c, out, connService{Service: svc, s: s}, func(k bool) {
		keep = keep || k
		if token != "" {
			s.dropClaim(token, true, keep)
			token = ""
		} else {
			cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			client.Close(cctx, keep)
			cancel()
		}
	})
	if token != "" {
		// Gone without a bye: the client may come back (a dropped ssh).
		s.dropClaim(token, false, false)
		return
	}
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	client.Close(cctx, keep)
	cancel()
}

// serveRequests serves the requests of the service connection c on svc, each on its own
// goroutine so a long yield blocks nothing, until the connection ends or says bye. Every
// request still running is then cancelled and waited for; after a bye, bye is called
// with the bye's keep, and then the bye is answered.
func (s *Server) serveRequests(c net.Conn, out *sender, svc session.Service, bye func(keep bool)) {
	ctx, cancelAll := context.WithCancel(context.Background())
	var mu sync.Mutex
	inflight := map[uint64]context.CancelFunc{}
	var wg sync.WaitGroup
	defer func() {
		cancelAll()
		wg.Wait()
	}()
	for {
		f, err := readFrame(c, MaxFrame)
		if err != nil {
			if errors.Is(err, errFrameTooBig) || errors.As(err, new(*json.SyntaxError)) {
				out.send(&frame{Op: opReply, Error: &wireError{Kind: "invalid", Message: err.Error()}})
			}
			return
		}
		switch f.Op {
		case opCancel:
			mu.Lock()
			if cancel := inflight[f.ID]; cancel != nil {
				cancel()
			}
			mu.Unlock()
		case opBye:
			var b byeBody
			strictDecode(f.Body, &b)
			cancelAll()
			wg.Wait()
			bye(b.Keep)
			out.send(reply(f.ID, struct{}{}))
			return
		default:
			rctx, cancel := context.WithCancel(ctx)
			mu.Lock()
			if inflight[f.ID] != nil {
				mu.Unlock()
				cancel()
				out.send(&frame{ID: f.ID, Op: opReply, Error: &wireError{Kind: "invalid", Message: "duplicate request id"}})
				continue
			}
			inflight[f.ID] = cancel
			mu.Unlock()
			// One goroutine per request: owned by this connection, ends when the call
			// returns (its context is cancelled when the connection ends).
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(inflight, f.ID)
					mu.Unlock()
					cancel()
				}()
				out.send(s.dispatch(rctx, svc, f))
			})
		}
	}
}

// takeClaim returns the session client of token, held by one more connection: the one
// its earlier connections used (stopping its grace period), else a new one from create.
func (s *Server) takeClaim(token string, create func() *session.Client) *session.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	cl := s.claims[token]
	if cl != nil && cl.timer != nil {
		if !cl.timer.Stop() {
			cl = nil // the grace period just ended: its sessions are being ended
		} else {
			cl.timer = nil
		}
	}
	if cl == nil {
		cl = &claim{client: create()}
		s.claims[token] = cl
	}
	cl.conns++
	return cl.client
}

// dropClaim releases one connection's hold on token's client. After a bye (the client
// closed it on purpose) the last holder ends its sessions at once (unless keep);
// otherwise the last holder starts the grace period, at whose end they are ended.
func (s *Server) dropClaim(token string, bye, keep bool) {
	s.mu.Lock()
	cl := s.claims[token]
	if cl == nil {
		s.mu.Unlock()
		return
	}
	cl.conns--
	if cl.conns > 0 {
		s.mu.Unlock()
		return
	}
	if !bye {
		grace := s.opts.Grace
		if grace <= 0 {
			grace = DefaultGrace
		}
		s.log.Info("client gone without a bye: keeping its sessions", "grace", grace)
		// The grace timer: its function runs once, unless takeClaim stops it first.
		cl.timer = time.AfterFunc(grace, func() {
			s.mu.Lock()
			if s.claims[token] != cl {
				s.mu.Unlock()
				return
			}
			delete(s.claims, token)
			s.mu.Unlock()
			s.log.Info("grace period over: ending the sessions of a client that did not come back")
			cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			cl.client.Close(cctx, false)
			cancel()
		})
		s.mu.Unlock()
		return
	}
	delete(s.claims, token)
	s.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	cl.client.Close(cctx, keep)
	cancel()
}

// dispatch runs one request. A panic becomes an error reply; the server carries on.
func (s *Server) dispatch(ctx context.Context, c session.Service, f *frame) (r *frame) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic serving a request", "op", f.Op, "panic", p, "stack", string(debug.Stack()))
			r = &frame{ID: f.ID, Op: opReply, Error: &wireError{Message: fmt.Sprintf("ptyhub server: internal error: %v", p)}}
		}
	}()
	h := handlers[f.Op]
	if h == nil {
		return &frame{ID: f.ID, Op: opReply, Error: toWire(fmt.Errorf("%w: unknown request %q", session.ErrInvalid, f.Op))}
	}
	out, err := h.serve(ctx, c, f.Body)
	if err != nil {
		return &frame{ID: f.ID, Op: opReply, Error: toWire(err)}
	}
	return reply(f.ID, out)
}

// strictDecode decodes a JSON body, rejecting unknown fields (an ErrInvalid error).
func strictDecode(b json.RawMessage, v any) error {
	if len(b) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", session.ErrInvalid, err)
	}
	return nil
}

// cliPool is the pool every connection that owns no sessions of its own (the CLI)
// shares: its sessions, its names, its read positions.
const cliPool = "cli"

// serveAttach streams a session's output to an attached client and its keys and window
// size to the session. The output loop runs here; a reader goroutine (owned by this
// function, ended by closing the connection) takes the client's frames. A client that
// falls behind the ring is repainted; one that stops reading is dropped after
// writeTimeout. Neither ever slows the session.
func (s *Server) serveAttach(c *net.UnixConn, hf *frame, h hello, w *Welcome) {
	out := &sender{c: c}
	// Terminals attach from the CLI: typing into a session of the CLI's pool is its
	// owner's own input, not a human's news.
	a, err := s.mgr.Attach(h.Session, session.AttachOptions{ReadOnly: h.ReadOnly, Watch: h.Watch, Pool: cliPool})
	if errors.Is(err, session.ErrNotFound) && s.relay(c, hf, h.Session) {
		return
	}
	if err != nil {
		out.send(&frame{Op: opReply, Error: toWire(err)})
		return
	}
	defer a.Detach()
	w.SessionID, w.Command = a.SessionID(), a.Command()
	// The bell's first channel is taken before the reply, so an ask the client makes as
	// soon as it is attached rings it; one already waiting rings it at once.
	asked, ringNow := a.Asked()
	if out.send(reply(0, w)) != nil {
		return
	}
	if h.Rows > 0 && h.Cols > 0 {
		a.Resize(h.Rows, h.Cols)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inDone := make(chan struct{})
	go func() {
		defer close(inDone)
		defer cancel()
		for {
			f, err := readFrame(c, MaxFrame)
			if err != nil {
				return
			}
			switch f.Op {
			case opInput:
				if err := a.Write(f.Data); err != nil && !a.ReadOnly() {
					return
				}
			case opWinsize:
				var ws winsize
				if strictDecode(f.Body, &ws) == nil {
					a.Resize(ws.Rows, ws.Cols)
				}
			default: // detach, or anything else: the client is leaving
				return
			}
		}
	}()
	defer func() { c.Close(); <-inDone }()
	if !h.Watch {
		// The bell: rings the attached terminal each time an agent asks for a person
		// here, and at once when one already waits. Owned by this function; ends with
		// ctx (the connection's end).
		go func() {
			if ringNow && out.send(&frame{Op: opOutput, Data: []byte("\a")}) != nil {
				return
			}
			for {
				select {
				case <-asked:
					asked, _ = a.Asked()
					if out.send(&frame{Op: opOutput, Data: []byte("\a")}) != nil {
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}

	var off int64
	if h.Watch {
		off = a.End()
		if h.From != nil {
			off = min(max(*h.From, 0), off)
		}
	} else {
		var data []byte
		data, off = a.Repaint()
		if out.send(&frame{Op: opOutput, Data: data}) != nil {
			return
		}
	}
	buf := make([]byte, 32<<10)
	for {
		n, missed, err := a.Read(ctx, buf, off)
		if missed > 0 && !h.Watch {
			// Fell behind the ring: resynchronise by a repaint instead of replaying.
			var data []byte
			data, off = a.Repaint()
			if out.send(&frame{Op: opOutput, Data: data}) != nil {
				return
			}
			continue
		}
		off += missed + int64(n)
		if n > 0 {
			if out.send(&frame{Op: opOutput, Data: buf[:n]}) != nil {
				return
			}
		}
		if err == io.EOF {
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			exit := a.WaitExit(wctx)
			wcancel()
			b, _ := json.Marshal(endBody{Exit: exit})
			out.send(&frame{Op: opEnd, Body: b})
			return
		}
		if err != nil {
			return
		}
	}
}
