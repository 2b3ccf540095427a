package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ptyhub/ptyhub/reaper"
	"github.com/ptyhub/ptyhub/session"
)

// ErrConnLost is returned by calls on a client whose server connection ended.
var ErrConnLost = errors.New("connection to the ptyhub server lost")

// DialOptions say how to reach the server.
type DialOptions struct {
	// Socket is the socket path (default SocketPath()).
	Socket string
	// AutoStart starts a server when none is listening: Executable ServeArgs… --socket
	// Socket, detached (new session, stdin /dev/null, output appended to
	// StateDir()/server.log, or discarded when that cannot be opened, with a note to
	// Warn; the environment without credential-like variables), then waits for its
	// socket. A socket refused by the checks (RefusedError) starts nothing.
	AutoStart bool
	// Executable is the ptyhub binary to start (default os.Executable()).
	Executable string
	// ServeArgs are the arguments that make Executable serve (default ["serve"]).
	ServeArgs []string
	// Name names the client in listings (owner of its sessions).
	Name string
	// Own: sessions started through this client end when it closes (ptyhub mcp).
	Own bool
	// Caller is where the sessions started through this client run: its directory and
	// environment (nil: the server's own, which is rarely what a caller wants; see
	// session.Here).
	Caller *session.Caller
	// Warn receives a note for the human when the server is of another build and was
	// kept because it runs sessions (nil: no note).
	Warn func(string)
	// Dialer, when set, makes the connection instead of the Unix socket (Socket and
	// AutoStart are then unused): a transport to another machine whose far end is
	// `ptyhub dial-stdio` (see package remote). The server there is whatever build that
	// machine runs; only its protocol must match. A failed handshake is passed to
	// Explain, which may return a better error (the transport's stderr, say).
	Dialer func(ctx context.Context) (net.Conn, error)
	// Explain, with Dialer, turns a failed handshake on conn into the error to return.
	Explain func(conn net.Conn, err error) error
	// Token identifies this client across connections: when an owning connection (Own)
	// that carries a token drops without saying bye, the server keeps its sessions for
	// a grace period, and a new connection with the same token takes them back (its
	// pool, its ended-since-last-call notices). Empty: no grace, sessions end at once.
	Token string
}

// connect connects to the server, starting one first if allowed.
func connect(ctx context.Context, o *DialOptions) (*net.UnixConn, error) {
	if o.Socket == "" {
		o.Socket = SocketPath()
	}
	c, err := dialOnce(o.Socket)
	if err == nil || !o.AutoStart || !errNoServer(err) {
		if err != nil {
			return nil, connectError(o.Socket, err)
		}
		return c, nil
	}
	exited, err := startServer(o)
	if err != nil {
		return nil, err
	}
	// Wait for the socket; the server we started may lose the race to another one, which
	// is fine: any server on the socket will do.
	delay := time.Millisecond
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := dialOnce(o.Socket)
		if err == nil {
			return c, nil
		}
		if !errNoServer(err) {
			return nil, connectError(o.Socket, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the ptyhub server did not start within 10 s (see %s)", filepath.Join(StateDir(), "server.log"))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-exited:
			// It exited: fine if another server won the race, else its log says why.
			exited = nil
			if c, err := dialOnce(o.Socket); err != nil {
				deadline = time.Now().Add(time.Second)
			} else {
				c.Close()
			}
		case <-time.After(delay):
			delay = min(delay*2, 50*time.Millisecond)
		}
	}
}

// connectError is the error of a failed connection to the server at socket. A refusal
// names the path already and says what to do: it is returned as it is.
func connectError(socket string, err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return err
	}
	return fmt.Errorf("connect to the ptyhub server at %s: %w", socket, err)
}

// build is the build of the server this client would start: that of o.Executable, else
// this process's.
func (o *DialOptions) build() string {
	if o.Executable != "" {
		return buildOf(o.Executable)
	}
	return Build()
}

// dialOnce connects to the server socket at path, after checking its directory
// (checkDir: strict for the default path), and checks that the server runs as this user
// (checkPeer) before returning: no byte is sent to a socket that is, or could be, another
// user's. A refusal is a *RefusedError; a missing directory or socket, or a socket
// nobody listens on, is an error errNoServer recognises.
func dialOnce(path string) (*net.UnixConn, error) {
	if err := checkDir(filepath.Dir(path), path == defaultSocketPath()); err != nil {
		return nil, err
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if _, err := checkPeer(c, path); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// startServer starts a detached server. The returned channel is closed when it exits; a
// goroutine owned by this package reaps it (it ends when the server does).
func startServer(o *DialOptions) (<-chan struct{}, error) {
	exe := o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("start the ptyhub server: %w", err)
		}
	}
	args := o.ServeArgs
	if len(args) == 0 {
		args = []string{"serve"}
	}
	args = append(append([]string(nil), args...), "--socket", o.Socket)
	cmd := exec.Command(exe, args...)
	// Its log goes to the state directory. When that cannot be written (read-only or
	// full), the server still starts, logging nowhere: a log is not worth the user's
	// every command.
	if logf, err := openServerLog(); err == nil {
		defer logf.Close()
		cmd.Stdout, cmd.Stderr = logf, logf
	} else if o.Warn != nil {
		o.Warn(fmt.Sprintf("the ptyhub server starts without its log: %v", err))
	}
	// The server outlives this process and is the parent of every session's reaper:
	// its environment, readable by any process of the user (/proc/PID/environ), keeps no
	// credential. A caller's environment reaches its sessions in its requests.
	cmd.Env = serverEnv(os.Environ())
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the ptyhub server: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	return exited, nil
}

// serverEnv returns the environment of a server started from a process whose
// environment is env: env without credentials (session.WithoutSecrets), without the
// PTYHUB_SESSION marker of a session this client may run in, and with
// PTYHUB_SERVER=1. A server is the user's, not that session's: with the marker, the
// session's sweeps would take it (and every session it hosts) once this client exits
// and it is re-parented to the session's reaper; PTYHUB_SERVER=1, with setsid, is how
// those sweeps recognise it and leave it and its subtree alone (see reaper.EnvServer).
func serverEnv(env []string) []string {
	env, _ = session.WithoutSecrets(env, nil)
	out := env[:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name != reaper.EnvSession && name != reaper.EnvServer {
			out = append(out, kv)
		}
	}
	return append(out, reaper.EnvServer+"=1")
}

// openServerLog opens StateDir()/server.log for appending, creating the directory.
func openServerLog() (*os.File, error) {
	dir := StateDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(dir, "server.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// handshake sends h and reads the welcome, within 10 s.
func handshake(c net.Conn, h *hello) (*Welcome, error) {
	return handshakeWithin(c, h, 10*time.Second)
}

// handshakeWithin is handshake with another bound on the whole exchange.
func handshakeWithin(c net.Conn, h *hello, d time.Duration) (*Welcome, error) {
	b, _ := json.Marshal(h)
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	werr := writeFrame(c, &frame{Op: "hello", Body: b})
	// Read even when the write failed: a server that refuses us (another uid) may have
	// answered and closed before our hello arrived, and its answer says why.
	f, err := readFrame(c, maxReplyFrame)
	if err != nil {
		if werr != nil {
			err = werr
		}
		return nil, fmt.Errorf("ptyhub server handshake: %w", err)
	}
	if f.Error != nil {
		if f.Error.Kind == kindProtocol {
			e := &VersionError{}
			if json.Unmarshal(f.Body, &e.Server) == nil {
				return nil, e
			}
		}
		if len(f.Body) == 0 && f.Error.Kind == "invalid" && strings.HasPrefix(f.Error.Message, "bad hello") {
			// Protocol 1 servers refuse every newer hello this way, and say no more.
			return nil, &VersionError{Server: Welcome{Protocol: 1, Running: -1}}
		}
		return nil, fromWire(f.Error)
	}
	w := &Welcome{}
	if err := json.Unmarshal(f.Body, w); err != nil {
		return nil, fmt.Errorf("ptyhub server handshake: %w", err)
	}
	return w, nil
}

// Client is a connection to the server that implements session.Service. Calls may run
// concurrently; each is one request on the connection. Cancelling a call's context
// cancels it on the server (the call then returns what the server returns, as the
// in-process manager does). Close ends the connection. Its operations (session.Service's
// methods, Status, Web) are in ops.go, one line each over the table of operations.
type Client struct {
	c       net.Conn
	welcome *Welcome

	wmu sync.Mutex // serialises writes

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan *frame
	err     error         // why the connection ended
	done    chan struct{} // closed when the reader ends
}

var _ session.Service = (*Client)(nil)

// Dial connects to the server (starting it when o.AutoStart allows) as a service client.
func Dial(ctx context.Context, o DialOptions) (*Client, error) {
	c, w, err := dialHello(ctx, &o, &hello{Protocol: Protocol, Build: o.build(), Mode: ModeService, Name: o.Name, Own: o.Own, Caller: o.Caller, Token: o.Token})
	if err != nil {
		return nil, err
	}
	return newClient(c, w), nil
}

// newClient returns the client of a service connection c whose server welcomed it with w,
// and starts its reader.
func newClient(c net.Conn, w *Welcome) *Client {
	cl := &Client{c: c, welcome: w, pending: map[uint64]chan *frame{}, done: make(chan struct{})}
	go cl.readLoop()
	return cl
}

// Done returns a channel closed when the connection to the server has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// ServerPID returns the server's process id.
func (c *Client) ServerPID() int { return c.welcome.PID }

// readLoop delivers replies. Owned by the client; ends when the connection does.
func (c *Client) readLoop() {
	var err error
	for {
		var f *frame
		f, err = readFrame(c.c, maxReplyFrame)
		if err != nil {
			break
		}
		if f.ID == 0 && f.Error != nil { // a connection-level error
			err = fromWire(f.Error)
			break
		}
		c.mu.Lock()
		ch := c.pending[f.ID]
		delete(c.pending, f.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	}
	c.mu.Lock()
	if c.err == nil {
		c.err = fmt.Errorf("%w: %v", ErrConnLost, err)
	}
	c.mu.Unlock()
	close(c.done)
	c.c.Close()
}

func (c *Client) send(f *frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return writeFrame(c.c, f)
}

// call sends one request and decodes its reply into out. When ctx ends first, the
// request is cancelled on the server: a reply the server had already made is kept (what
// the call did, such as a session it started, is not lost), and an error it answers with
// is ctx's own error, as a cancelled call of the in-process manager returns (callers
// tell "I stopped it" from a failure with errors.Is(err, context.Canceled)).
func (c *Client) call(ctx context.Context, op string, req, out any) error {
	var body json.RawMessage
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return fmt.Errorf("%w: %v", session.ErrInvalid, err)
		}
		body = b
	}
	ch := make(chan *frame, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.send(&frame{ID: id, Op: op, Body: body}); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%w: %v", ErrConnLost, err)
	}
	var f *frame
	cancelled := false
	select {
	case f = <-ch:
	case <-c.done:
		return c.lostErr()
	case <-ctx.Done():
		// Cancel on the server and take its answer (it returns at once).
		c.send(&frame{ID: id, Op: opCancel})
		select {
		case f = <-ch:
		case <-c.done:
			return c.lostErr()
		}
		cancelled = true
	}
	if f.Error != nil {
		if cancelled {
			return ctx.Err()
		}
		return fromWire(f.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(f.Body, out); err != nil {
		return fmt.Errorf("ptyhub server reply: %w", err)
	}
	return nil
}

func (c *Client) lostErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection. When the client owns its sessions (DialOptions.Own) and keep
// is false, it first waits (bounded by ctx) until the server has ended them, so they are
// gone when Close returns; with keep they stay with the server.
func (c *Client) Close(ctx context.Context, keep bool) error {
	err := c.call(ctx, opBye, byeBody{Keep: keep}, nil)
	c.c.Close()
	<-c.done
	if errors.Is(err, ErrConnLost) {
		err = nil
	}
	return err
}

// Abandon ends the connection without a goodbye, as a dropped connection ends: a
// server that knows the client's token keeps its sessions for the grace period.
func (c *Client) Abandon() {
	c.c.Close()
	<-c.done
}

// Attach is one attached client connection (see DialAttach).
type Attach struct {
	c       net.Conn
	wmu     sync.Mutex
	Welcome *Welcome
}

// AttachOptions say how to attach.
type AttachOptions struct {
	Session  string
	ReadOnly bool
	// Watch streams the output from From (default: from now) without repaint, as a
	// non-terminal reader (ptyhub read -f); it cannot type.
	Watch      bool
	From       *int64
	Rows, Cols int // the client's terminal size (0: none)
}

// DialAttach connects to the server and attaches to a session.
func DialAttach(ctx context.Context, o DialOptions, a AttachOptions) (*Attach, error) {
	c, w, err := dialHello(ctx, &o, &hello{Protocol: Protocol, Build: o.build(), Mode: ModeAttach, Name: o.Name,
		Session: a.Session, ReadOnly: a.ReadOnly, Watch: a.Watch, From: a.From, Rows: a.Rows, Cols: a.Cols})
	if err != nil {
		return nil, err
	}
	return &Attach{c: c, Welcome: w}, nil
}

// Recv returns the next piece of output. At the end of the session's output it returns
// ended=true and how the session ended (exit). An error means the connection ended
// (Close was called, or the server went away).
func (a *Attach) Recv() (data []byte, ended bool, exit string, err error) {
	for {
		f, err := readFrame(a.c, maxReplyFrame)
		if err != nil {
			return nil, false, "", err
		}
		switch f.Op {
		case opOutput:
			return f.Data, false, "", nil
		case opEnd:
			var e endBody
			json.Unmarshal(f.Body, &e)
			return nil, true, e.Exit, nil
		}
		if f.Error != nil {
			return nil, false, "", fromWire(f.Error)
		}
	}
}

func (a *Attach) send(f *frame) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	return writeFrame(a.c, f)
}

// Input types p into the session (ignored by the server for read-only clients).
func (a *Attach) Input(p []byte) error { return a.send(&frame{Op: opInput, Data: p}) }

// Resize reports the client's terminal size.
func (a *Attach) Resize(rows, cols int) error {
	b, _ := json.Marshal(winsize{Rows: rows, Cols: cols})
	return a.send(&frame{Op: opWinsize, Body: b})
}

// Close detaches: the session keeps running. It unblocks Recv.
func (a *Attach) Close() error {
	a.send(&frame{Op: "detach"})
	return a.c.Close()
}
