package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ptyhub/ptyhub/session"
)

// The operations of a service connection, each registered once: its name on the wire,
// its request and result types, and its handler, which runs it on a session.Service. The
// wire client (Client's methods below, through op.send) and the server's dispatch
// (handlers, through op.serve) are generic over this table; neither names an operation
// anywhere else.
//
// To add an operation: add its method to session.Service and write it in the engine
// (session.Client); register it here with its wire name and handler (a method expression
// such as session.Service.Kill) and give Client its one-line method below; give it a
// tool in mcpserver. The compiler then names every other session.Service still missing
// the method, and TestOpsRoundTrip fails until the operation crosses the wire.
var (
	opExec   = register("exec", session.Service.Exec)
	opWrite  = register("write", session.Service.Write)
	opRead   = register("read", session.Service.Read)
	opList   = register("list", list)
	opKill   = register("kill", session.Service.Kill)
	opResize = register("resize", session.Service.Resize)
	opWait   = register("wait", session.Service.Wait)
	opWatch  = register("watch", session.Service.Watch)
	opAsk    = register("ask", askHuman)        // ask for a person (session.Asker)
	opStatus = register("status", serverStatus) // the server's health
	opWeb    = register("web", startWeb)        // start the server's browser view
)

// Exec implements session.Service.
func (c *Client) Exec(ctx context.Context, req session.ExecRequest) (*session.Result, error) {
	return opExec.send(c, ctx, req)
}

// Write implements session.Service.
func (c *Client) Write(ctx context.Context, req session.WriteRequest) (*session.Result, error) {
	return opWrite.send(c, ctx, req)
}

// Read implements session.Service.
func (c *Client) Read(ctx context.Context, req session.ReadRequest) (*session.Result, error) {
	return opRead.send(c, ctx, req)
}

// List implements session.Service.
func (c *Client) List(ctx context.Context) (*session.ListResult, error) {
	return opList.send(c, ctx, none{})
}

// Kill implements session.Service.
func (c *Client) Kill(ctx context.Context, req session.KillRequest) (*session.KillResult, error) {
	return opKill.send(c, ctx, req)
}

// Resize implements session.Service.
func (c *Client) Resize(ctx context.Context, req session.ResizeRequest) (*session.ResizeResult, error) {
	return opResize.send(c, ctx, req)
}

// Wait implements session.Service. Cancelling ctx cancels the wait in the server (not
// the sessions).
func (c *Client) Wait(ctx context.Context, req session.WaitRequest) (*session.WaitResult, error) {
	return opWait.send(c, ctx, req)
}

// Watch implements session.Service.
func (c *Client) Watch(ctx context.Context, req session.WatchRequest) (*session.WatchResult, error) {
	return opWatch.send(c, ctx, req)
}

// AskHuman implements session.Asker.
func (c *Client) AskHuman(ctx context.Context, req session.AskRequest) (*session.AskResult, error) {
	return opAsk.send(c, ctx, req)
}

// Status returns the server's health (sessions by state, fds and their limit, RSS).
func (c *Client) Status(ctx context.Context) (*Status, error) {
	return opStatus.send(c, ctx, none{})
}

// Web asks the server to start its browser view on listen (host:port; "" for a free
// port on 127.0.0.1) unless it runs already, and returns the page's URL with its token.
func (c *Client) Web(ctx context.Context, listen string) (string, error) {
	r, err := opWeb.send(c, ctx, webBody{Listen: listen})
	if err != nil {
		return "", err
	}
	return r.URL, nil
}

// op is one registered operation (see register).
type op[Req, Res any] struct {
	name string
	call func(session.Service, context.Context, Req) (*Res, error)
}

// none is the request of an operation that takes none: it is sent without a body, and a
// body sent with it is ignored.
type none struct{}

// handler is a registered operation with its types hidden, as the dispatch holds it.
type handler interface {
	// serve decodes body (strictly: an unknown field is an ErrInvalid error), runs the
	// operation on svc and returns its result.
	serve(ctx context.Context, svc session.Service, body json.RawMessage) (any, error)
}

// handlers are the registered operations by wire name. Written only while the package
// initialises (register); read-only after.
var handlers = map[string]handler{}

// register enters the operation name, run by call, into handlers and returns it. A name
// registered twice, or taken by the connection itself (cancel, bye), panics at start-up.
func register[Req, Res any](name string, call func(session.Service, context.Context, Req) (*Res, error)) op[Req, Res] {
	if handlers[name] != nil || name == opCancel || name == opBye {
		panic("server: operation " + name + " registered twice")
	}
	o := op[Req, Res]{name: name, call: call}
	handlers[name] = o
	return o
}

// send runs the operation on c's server: one request, its reply decoded.
func (o op[Req, Res]) send(c *Client, ctx context.Context, req Req) (*Res, error) {
	var body any = req
	if _, ok := body.(none); ok {
		body = nil
	}
	r := new(Res)
	if err := c.call(ctx, o.name, body, r); err != nil {
		return nil, err
	}
	return r, nil
}

func (o op[Req, Res]) serve(ctx context.Context, svc session.Service, body json.RawMessage) (any, error) {
	var req Req
	if _, ok := any(req).(none); !ok {
		if err := strictDecode(body, &req); err != nil {
			return nil, err
		}
	}
	return o.call(svc, ctx, req)
}

// list is the handler of list.
func list(svc session.Service, ctx context.Context, _ none) (*session.ListResult, error) {
	return svc.List(ctx)
}

// serverOps are the server's own operations, offered by the service a connection's
// requests run on (connService).
type serverOps interface {
	status(ctx context.Context) *Status
	startWeb(listen string) (url string, err error)
}

// errNotServer answers a server operation asked of a service that is no server.
var errNotServer = fmt.Errorf("%w: not a ptyhub server", session.ErrInvalid)

// serverStatus is the handler of status.
func serverStatus(svc session.Service, ctx context.Context, _ none) (*Status, error) {
	so, ok := svc.(serverOps)
	if !ok {
		return nil, errNotServer
	}
	return so.status(ctx), nil
}

// startWeb is the handler of web.
func startWeb(svc session.Service, _ context.Context, req webBody) (*webReply, error) {
	so, ok := svc.(serverOps)
	if !ok {
		return nil, errNotServer
	}
	url, err := so.startWeb(req.Listen)
	if err != nil {
		return nil, err
	}
	return &webReply{URL: url}, nil
}

// connService is what one service connection's requests run on: the sessions it sees
// (its session.Client, or the router over it) and the server's own operations.
type connService struct {
	session.Service
	s *Server
}

// AskHuman implements session.Asker, when the sessions' service does.
func (c connService) AskHuman(ctx context.Context, req session.AskRequest) (*session.AskResult, error) {
	return askHuman(c.Service, ctx, req)
}

func (c connService) status(ctx context.Context) *Status {
	s := c.s
	s.mu.Lock()
	conns := len(s.conns)
	s.mu.Unlock()
	st := &Status{Stats: s.mgr.Stats(), PID: os.Getpid(), Version: s.opts.Version,
		Connections: conns, UptimeMs: time.Since(s.started).Milliseconds()}
	st.Hosts = s.hostStatuses(ctx)
	return st
}

func (c connService) startWeb(listen string) (string, error) {
	if c.s.opts.Web == nil {
		return "", errors.New("this ptyhub server has no web view")
	}
	return c.s.opts.Web.Start(listen)
}

// askHuman hands ask to svc when it can ask for a person (session.Asker).
func askHuman(svc session.Service, ctx context.Context, req session.AskRequest) (*session.AskResult, error) {
	a, ok := svc.(session.Asker)
	if !ok {
		return nil, fmt.Errorf("%w: this ptyhub cannot ask for a person", session.ErrInvalid)
	}
	return a.AskHuman(ctx, req)
}
