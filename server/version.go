package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/proc"
	"github.com/ptyhub/ptyhub/session"
)

// VersionError is returned by Dial when the server speaks another protocol and could not
// be replaced (it has running sessions, or the caller did not allow starting a server).
type VersionError struct {
	// Server is what the server said about itself; for a protocol 1 server (which does
	// not say) only Protocol and PID are set.
	Server Welcome
	// Build is the client's build.
	Build string
}

func (e *VersionError) Error() string {
	w := e.Server
	return fmt.Sprintf("the running ptyhub server (pid %d, %s) speaks protocol %d, this ptyhub (%s) protocol %d; it has %s, so it was not replaced: end them, or stop it and them with 'ptyhub kill-server'",
		w.PID, DescribeBuild(w.Version, w.Build), w.Protocol, DescribeBuild("", e.Build), Protocol, runningText(w.Running))
}

func runningText(n int) string {
	switch n {
	case -1:
		return "running sessions"
	case 1:
		return "1 running session"
	}
	return fmt.Sprintf("%d running sessions", n)
}

// DescribeBuild names a build for humans: its version when known and a short build id.
func DescribeBuild(version, build string) string {
	id := build
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:] // the Go build ID's content hash part
	}
	if len(id) > 12 {
		id = id[:12]
	}
	if id == "" {
		id = "unknown"
	}
	if version != "" {
		return "version " + version + ", build " + id
	}
	return "build " + id
}

// otherBuild describes why the server of w is not this client's build ("" when it is).
func otherBuild(w *Welcome, build string) string {
	switch {
	case w.ExeDeleted:
		return fmt.Sprintf("runs a build whose executable was deleted or replaced (%s)", DescribeBuild(w.Version, w.Build))
	case w.Build != build:
		return fmt.Sprintf("runs another build (%s; this ptyhub: %s)", DescribeBuild(w.Version, w.Build), DescribeBuild("", build))
	}
	return ""
}

// dialHello connects to the server (starting one when o.AutoStart allows) and sends h.
// A server of another build, or whose executable is gone, is replaced when it runs no
// session, o.AutoStart is set and h is a service hello: it is stopped (SIGTERM, as 'ptyhub kill-server' does)
// and one of this build started. Otherwise a server of this protocol is used, with a
// note to o.Warn, and one of another protocol is refused with a *VersionError.
func dialHello(ctx context.Context, o *DialOptions, h *hello) (net.Conn, *Welcome, error) {
	if o.Dialer != nil {
		return dialRemote(ctx, o, h)
	}
	for attempt := 0; ; attempt++ {
		c, err := connect(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		w, err := handshake(c, h)
		var verr *VersionError
		var why string
		switch {
		case err == nil:
			if why = otherBuild(w, h.Build); why == "" {
				return c, w, nil
			}
		case errors.As(err, &verr):
			verr.Build = h.Build
			if verr.Server.PID == 0 {
				verr.Server.PID, _ = peerPID(c)
			}
			if verr.Server.Running < 0 {
				verr.Server.Running = legacyRunning(o.Socket)
			}
			w = &verr.Server
		default:
			c.Close()
			return nil, nil, err
		}
		ref, perr := peerRef(c)
		if attempt == 0 && o.AutoStart && h.Mode == ModeService && w.Running == 0 && ref.PID != os.Getpid() {
			c.Close()
			if errors.Is(perr, errPeerClosed) {
				ref, perr = dialPeerRef(o.Socket)
				if perr == nil && ref.PID == os.Getpid() {
					perr = errors.New("the server is this process")
				}
			}
			if perr != nil {
				return nil, nil, fmt.Errorf("replace the ptyhub server of another build: %w", perr)
			}
			if err := stopServer(ctx, ref); err != nil {
				return nil, nil, fmt.Errorf("replace the ptyhub server of another build: %w", err)
			}
			continue
		}
		if verr != nil {
			c.Close()
			return nil, nil, verr
		}
		if o.Warn != nil {
			o.Warn(fmt.Sprintf("the ptyhub server (pid %d) %s and has %s, so it keeps serving; 'ptyhub kill-server' stops it and its sessions, and the next command starts this build",
				w.PID, why, runningText(w.Running)))
		}
		return c, w, nil
	}
}

// remoteHandshakeTimeout bounds a handshake through a transport.
const remoteHandshakeTimeout = 45 * time.Second

// dialRemote connects through o.Dialer and says hello. Another build is normal on
// another machine; another protocol is a *VersionError.
func dialRemote(ctx context.Context, o *DialOptions, h *hello) (net.Conn, *Welcome, error) {
	c, err := o.Dialer(ctx)
	if err != nil {
		return nil, nil, err
	}
	// The handshake's own deadline does not cover a cancelled context: close the
	// connection then, which ends the handshake at once.
	// The transport's own connection (ssh: DNS, a jump host, authentication) happens
	// within the handshake, so it gets longer than a local socket's.
	stop := context.AfterFunc(ctx, func() { c.Close() })
	w, err := handshakeWithin(c, h, remoteHandshakeTimeout)
	stop()
	if err != nil {
		var verr *VersionError
		if errors.As(err, &verr) {
			verr.Build = h.Build
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		} else if o.Explain != nil {
			err = o.Explain(c, err)
		}
		c.Close()
		return nil, nil, err
	}
	return c, w, nil
}

// peerPID returns the pid of the server at the other end of c, after checking that it
// runs as this user (checkPeer).
func peerPID(c *net.UnixConn) (int, error) {
	return checkPeer(c, c.RemoteAddr().String())
}

// errPeerClosed: the server closed its end of the connection before its start was read.
var errPeerClosed = errors.New("the server closed the connection")

// peerRef returns the server at the other end of c (checkPeer) as a proc.Ref: its pid and
// its start, read while c is open. The server holds its end of c until it exits (nothing
// it starts inherits the descriptor), so when c has not hung up after the start was read,
// that start is the server's and not a later process's that got its pid. A connection
// the server had closed gives errPeerClosed (a protocol 1 server closes after its error);
// dialPeerRef asks on a fresh one.
func peerRef(c *net.UnixConn) (proc.Ref, error) {
	pid, err := peerPID(c)
	if err != nil {
		return proc.Ref{}, err
	}
	if pid <= 1 {
		return proc.Ref{}, fmt.Errorf("no server pid")
	}
	r := proc.Ref{PID: pid, Start: proc.StartTime(pid)}
	raw, err := c.SyscallConn()
	if err != nil {
		return proc.Ref{}, err
	}
	hup := false
	raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, _ := unix.Poll(fds, 0); n <= 0 {
			return
		}
		hup = fds[0].Revents&unix.POLLHUP != 0
		if !hup && fds[0].Revents&unix.POLLIN != 0 {
			// Readable: data, or the end of the stream (where POLLHUP is not set for it).
			var b [1]byte
			n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			hup = n == 0 && err == nil
		}
	})
	if hup || r.Start == 0 {
		return proc.Ref{}, errPeerClosed
	}
	return r, nil
}

// dialPeerRef connects to socket only to read its server's Ref (peerRef), sending nothing.
func dialPeerRef(socket string) (proc.Ref, error) {
	c, err := dialOnce(socket)
	if err != nil {
		return proc.Ref{}, err
	}
	defer c.Close()
	return peerRef(c)
}

// stopServer sends SIGTERM to the server r (which ends its sessions and removes its
// socket) and waits up to 20 s for it to exit. The signal reaches that process only
// (proc.Open): a server that exited meanwhile counts as stopped, and its pid, if another
// process has it by now, is not signalled.
func stopServer(ctx context.Context, r proc.Ref) error {
	p, err := proc.Open(r)
	if errors.Is(err, proc.ErrGone) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop the server (pid %d): %w", r.PID, err)
	}
	defer p.Close()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		if errors.Is(err, proc.ErrGone) {
			return nil
		}
		return fmt.Errorf("stop the server (pid %d): %w", r.PID, err)
	}
	if p.Wait(ctx, time.Now().Add(20*time.Second)) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the server (pid %d) did not exit within 20 s of SIGTERM", r.PID)
}

// legacyRunning asks a protocol 1 server, in its own words, how many sessions are
// running (-1 when it cannot tell).
func legacyRunning(socket string) int {
	c, err := dialOnce(socket)
	if err != nil {
		return -1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, _ := json.Marshal(map[string]any{"proto": 1, "mode": ModeService, "name": "version-check"})
	if writeFrame(c, &frame{Op: "hello", Body: b}) != nil {
		return -1
	}
	if f, err := readFrame(c, maxReplyFrame); err != nil || f.Error != nil {
		return -1
	}
	if writeFrame(c, &frame{ID: 1, Op: opList.name}) != nil {
		return -1
	}
	f, err := readFrame(c, maxReplyFrame)
	if err != nil || f.Error != nil {
		return -1
	}
	var l session.ListResult
	if json.Unmarshal(f.Body, &l) != nil {
		return -1
	}
	n := 0
	for _, s := range l.Sessions {
		if s.State == session.StateRunning {
			n++
		}
	}
	return n
}

// KillServer stops the server on socket (default SocketPath()) with SIGTERM, which ends
// every session it runs, and waits for it to exit. It works with a server of any build
// or protocol. It returns the server's pid.
func KillServer(ctx context.Context, socket string) (int, error) {
	if socket == "" {
		socket = SocketPath()
	}
	c, err := dialOnce(socket)
	if err != nil {
		if errNoServer(err) {
			return 0, fmt.Errorf("no ptyhub server is running on %s", socket)
		}
		return 0, connectError(socket, err)
	}
	r, err := peerRef(c)
	c.Close()
	if err != nil {
		return 0, err
	}
	return r.PID, stopServer(ctx, r)
}
