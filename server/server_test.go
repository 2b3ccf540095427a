package server

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// svServe runs an in-process server on a private socket until the test ends.
func svServe(t *testing.T) string {
	t.Helper()
	return svServeWith(t, Options{})
}

// svServeWith is svServe with options (the socket is chosen here).
func svServeWith(t *testing.T, o Options) string {
	t.Helper()
	mgr, err := session.NewManager(session.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "run", "s.sock")
	o.Socket = sock
	srv, err := Listen(mgr, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		mgr.Close(context.Background())
	})
	if _, err := Listen(mgr, Options{Socket: sock}); !errors.Is(err, ErrRunning) {
		t.Errorf("second Listen: %v, want ErrRunning", err)
	}
	return sock
}

// The client implements session.Service over the socket, with the manager's errors;
// cancelling a call cancels it on the server; owned sessions end with the connection.
func TestClientService(t *testing.T) {
	t.Parallel()
	sock := svServe(t)
	ctx := t.Context()
	c, err := Dial(ctx, DialOptions{Socket: sock, Name: "t", Own: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Exec(ctx, session.ExecRequest{Cmd: "echo hi"})
	if err != nil || r.Output != "hi\n" || r.State != session.StateExited {
		t.Fatalf("exec: %v %+v", err, r)
	}
	zero := int64(0)
	r, err = c.Exec(ctx, session.ExecRequest{Argv: []string{"cat"}, YieldTimeMs: &zero})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, session.WriteRequest{SessionID: "999"}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("write to an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := c.Exec(ctx, session.ExecRequest{}); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("empty exec: %v, want ErrInvalid", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	got := make(chan *session.Result, 1)
	go func() {
		long := int64(600_000)
		res, _ := c.Write(cctx, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: &long, WaitFor: "never"})
		got <- res
	}()
	l, err := c.List(ctx) // not blocked by the long call
	if err != nil || len(l.Sessions) != 2 {
		t.Errorf("list: %v %+v", err, l)
	}
	cancel()
	if res := <-got; res == nil || res.State != session.StateRunning {
		t.Errorf("cancelled write: %+v", res)
	}

	// An attached watcher sees typed input echoed, then the end.
	from := int64(0)
	a, err := DialAttach(ctx, DialOptions{Socket: sock}, AttachOptions{Session: r.SessionID, Watch: true, From: &from})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := DialAttach(ctx, DialOptions{Socket: sock}, AttachOptions{Session: r.SessionID, Rows: 30, Cols: 90})
	if err != nil {
		t.Fatal(err)
	}
	rw.Input([]byte("typed\n\x04"))
	var out strings.Builder
	for {
		data, ended, exit, err := a.Recv()
		if err != nil {
			t.Fatal(err)
		}
		out.Write(data)
		if ended {
			if exit != "exited with code 0" {
				t.Errorf("exit %q", exit)
			}
			break
		}
	}
	if !strings.Contains(out.String(), "typed\r\ntyped\r\n") {
		t.Errorf("watched %q", out.String())
	}
	a.Close()
	rw.Close()
	if err := c.Close(ctx, false); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := c.List(ctx); !errors.Is(err, ErrConnLost) {
		t.Errorf("call after close: %v", err)
	}
}

// A call the caller cancels returns the caller's context error, as the in-process
// manager's does (a router tells a member it stopped from one that failed by it), not the
// server's answer to the cancel.
func TestClientCancelledCallIsCanceled(t *testing.T) {
	t.Parallel()
	sock := svServe(t)
	c, err := Dial(t.Context(), DialOptions{Socket: sock, Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abandon()
	w, err := c.Watch(t.Context(), session.WatchRequest{Since: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Watch(ctx, session.WatchRequest{Since: w.Generation}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled Watch returned %v (%T), want context.Canceled", err, err)
	}
}

// A frame over the limit and a connection that never says hello are dropped; the server
// goes on serving others.
func TestBadClients(t *testing.T) {
	t.Parallel()
	sock := svServe(t)
	idle, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	huge, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer huge.Close()
	c, err := Dial(t.Context(), DialOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context(), false)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<30)
	huge.Write(hdr[:])
	huge.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := readFrame(huge, maxReplyFrame); err == nil {
		// The hello was too big: an error reply or a close, never a hang.
		if _, err := readFrame(huge, maxReplyFrame); err == nil {
			t.Error("the connection with a 1 GiB frame stayed open")
		}
	}
	if _, err := c.List(t.Context()); err != nil {
		t.Errorf("list after bad clients: %v", err)
	}
	// The idle connection is dropped after the handshake timeout.
	idle.SetReadDeadline(time.Now().Add(handshakeTimeout + 10*time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("idle connection: %v", err)
	}
}

// TestManyIdleConnections: a thousand connections that never say hello, and service
// connections that say nothing after it, do not keep the server from serving a normal
// client (below the cap on connections, maxConns).
func TestManyIdleConnections(t *testing.T) {
	t.Parallel()
	sock := svServe(t)
	const n = 1000
	conns := make([]net.Conn, 0, 2*n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	for i := range maxConns - n - 1 {
		c, err := Dial(t.Context(), DialOptions{Socket: sock, Name: "idle"})
		if err != nil {
			t.Fatalf("service connection %d: %v", i, err)
		}
		defer c.Close(context.Background(), false)
	}
	c, err := Dial(t.Context(), DialOptions{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context(), false)
	r, err := c.Exec(t.Context(), session.ExecRequest{Cmd: "echo served"})
	if err != nil || r.Output != "served\n" {
		t.Fatalf("exec with %d idle connections: %v %+v", maxConns-1, err, r)
	}
}

// svState polls the state of session id as a CLI connection sees it until it is want.
func svState(t *testing.T, sock, id, want string) {
	t.Helper()
	c, err := Dial(t.Context(), DialOptions{Socket: sock, Name: "look"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context(), true)
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := c.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range l.Sessions {
			if in.SessionID == id && in.State == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s never became %s: %+v", id, want, l.Sessions)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An owning connection with a token that drops keeps its sessions for the grace
// period; a connection with the same token takes them back (its bye ends them), and
// without one they end when the grace period is over.
func TestTokenGrace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	zero := int64(0)
	start := func(sock, token string) (*Client, string) {
		c, err := Dial(ctx, DialOptions{Socket: sock, Name: "agent", Own: true, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Exec(ctx, session.ExecRequest{Argv: []string{"cat"}, YieldTimeMs: &zero})
		if err != nil {
			t.Fatal(err)
		}
		return c, r.SessionID
	}

	long := svServeWith(t, Options{Grace: time.Hour})
	c, id := start(long, "tok-a")
	c.Abandon()
	svState(t, long, id, session.StateRunning)
	c2, err := Dial(ctx, DialOptions{Socket: long, Name: "agent", Own: true, Token: "tok-a"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c2.Write(ctx, session.WriteRequest{SessionID: id, Chars: "back\n", WaitFor: "back"}); err != nil || !strings.Contains(r.Output, "back") {
		t.Fatalf("write after reconnecting: %v %+v", err, r)
	}
	if err := c2.Close(ctx, false); err != nil {
		t.Fatal(err)
	}
	svState(t, long, id, session.StateExited) // the client that came back owned it

	short := svServeWith(t, Options{Grace: 50 * time.Millisecond})
	c, id = start(short, "tok-b")
	c.Abandon()
	svState(t, short, id, session.StateExited)
}
