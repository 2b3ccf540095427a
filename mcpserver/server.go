// Package mcpserver serves ptyhub's tools (exec_command, write_stdin, read_output,
// list_sessions, kill_session, resize_session, wait_sessions) over MCP with the official
// Go SDK, and the sessions as resources with subscriptions (resources.go) and progress
// notifications (progress.go).
//
// The tools are thin: each decodes its typed input (the session package's request
// structs; their JSON schema is derived from the structs, and the SDK rejects unknown
// properties and wrong types before a handler runs), calls a session.Service, and returns
// the result both as text a model reads (Result.Text) and as structuredContent. Semantic
// checks (ranges, regexes, ids) are the service's; its errors become tool errors
// (isError: true) with a hint of what to do next.
//
// Calls are served concurrently (each in its own goroutine, the SDK's or the
// transport's), so a long yield never holds up another call; MCP cancellation cancels the
// call's context, which stops the service's wait but not the session. Run serves stdio
// through LineTransport, which answers malformed and oversized lines instead of dropping
// the connection, and serves the tools/call requests it can answer whole itself, with
// the same handlers and results, without the SDK's request decoding (fast.go).
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/session"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Version is reported to clients as the server version (default "devel").
	Version string
	// Logger receives operational logs (default: discard). Never stdout.
	Logger *slog.Logger
	// MaxInFlight bounds concurrent tool calls (default 256); calls beyond it fail at once
	// with a tool error instead of queueing behind long yields.
	MaxInFlight int
	// ShutdownTimeout bounds how long Serve waits for in-flight calls to answer after its
	// context ends (default 5 s).
	ShutdownTimeout time.Duration
	// WebURL returns the URL (with its token) of the browser view of the sessions,
	// starting it if needed, for ask_human to send the person to (nil: no view).
	WebURL func(ctx context.Context) (string, error)
}

// Server is an MCP server exposing one session.Service.
type Server struct {
	svc  session.Service
	opts Options
	log  *slog.Logger
	mcp  *mcp.Server
	impl *mcp.Implementation // the server's name and version, as the SDK reports them
	sem  chan struct{}
	res  *resources // resources.go: sessions as MCP resources

	// infoMeta is the _meta {serverInfo: impl} of the sessionless protocol's results,
	// encoded once (fast.go).
	infoMeta knownMeta

	// tools holds each tool's handler as registered with the SDK (addTool), for the
	// calls LineTransport serves itself (fast.go). Written only by New.
	tools map[string]mcp.ToolHandler
	// sdkOnly sends every call through the SDK (for tests comparing both paths).
	sdkOnly bool

	// base ends every in-flight call when Serve's context ends (the SDK does not cancel
	// handlers on its own shutdown; it waits for them).
	base     context.Context
	shutdown context.CancelFunc
}

// New returns a server whose tools call svc.
func New(svc session.Service, opts Options) *Server {
	if opts.Version == "" {
		opts.Version = "devel"
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 256
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{svc: svc, opts: opts, log: log, sem: make(chan struct{}, opts.MaxInFlight),
		tools: map[string]mcp.ToolHandler{}}
	s.base, s.shutdown = context.WithCancel(context.Background())
	s.res = newResources(s)
	s.impl = &mcp.Implementation{Name: "ptyhub", Title: "ptyhub", Version: opts.Version}
	s.infoMeta = newKnownMeta(s.impl)
	s.mcp = mcp.NewServer(s.impl,
		&mcp.ServerOptions{
			Instructions: instructions,
			Logger:       log,
			// No logging capability: logs go to stderr, not to the model.
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{},
				Resources: &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true}},
			SubscribeHandler:   s.res.subscribe,
			UnsubscribeHandler: s.res.unsubscribe,
		})
	s.addTools()
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriPrefix + "{+id}", Name: "session",
		MIMEType: "text/plain", Description: "A session's output (text view), by id or name: any session the tools can name, also one of the CLI or on a host (ptyhub://session/ssh://box:4). resources/list lists this agent's sessions, those of the ptyhub server (the CLI's) and those on every host this agent used; each one's description says whose it is"}, s.res.read)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriPrefix + "{+id}" + screenSuffix, Name: "session-screen",
		MIMEType: "text/plain", Description: "A session's terminal screen, by id or name (also HOST:ID)"}, s.res.read)
	s.mcp.AddReceivingMiddleware(s.explainArgumentErrors, s.afterSubscribe)
	s.mcp.AddSendingMiddleware(s.afterListen)
	return s
}

// Serve serves one client on t until the client disconnects (returns nil) or ctx ends
// (returns ctx.Err()). When ctx ends, in-flight calls are cancelled and Serve waits up to
// Options.ShutdownTimeout for them to answer. Sessions are not touched: closing the
// service is the caller's job.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	lt, _ := t.(*LineTransport)
	var live atomic.Pointer[mcp.ServerSession] // set once Connect returns
	connected := make(chan struct{})           // closed once Connect has returned
	if lt != nil {
		// The transport serves the tools/call requests it can answer whole (fast.go).
		// The SDK's read loop starts inside Connect, so a call can be read before
		// Connect returns; it waits for the session to be known (Connect itself reads
		// nothing, so this cannot block it), else a call read in that gap would go to
		// the SDK although the session could serve it.
		lt.calls = func(params json.RawMessage) (func(context.Context) (json.RawMessage, error), bool) {
			<-connected
			return s.fastCall(live.Load(), params)
		}
	}
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		close(connected)
		return fmt.Errorf("mcp connect: %w", err)
	}
	live.Store(ss)
	close(connected)
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }() // ends when the connection is fully closed
	if lt != nil {
		// At the end of the input every request read is still answered (the transport
		// waits for that before it reports the end); calls still waiting stop waiting
		// and answer with what they have, as at shutdown. Ends when Serve returns.
		served := make(chan struct{})
		defer close(served)
		go func() {
			select {
			case <-lt.InputEnded():
				s.shutdown()
			case <-served:
			}
		}()
	}
	rctx, stopRes := context.WithCancel(ctx)
	resDone := make(chan struct{})
	// Keeps the resource list in step with the sessions; ends when Serve returns.
	go func() { s.res.run(rctx); close(resDone) }()
	defer func() { stopRes(); <-resDone }()
	select {
	case err := <-done:
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	case <-ctx.Done():
	}
	s.shutdown()
	closed := make(chan struct{})
	go func() { // ends when in-flight calls have answered
		ss.Close()
		if lt != nil {
			lt.waitCalls()
		}
		close(closed)
	}()
	timer := time.NewTimer(s.opts.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-closed:
	case <-timer.C:
		s.log.Warn("mcp: in-flight calls did not answer before shutdown", "timeout", s.opts.ShutdownTimeout)
	}
	return ctx.Err()
}

// Run serves svc over newline-delimited JSON-RPC on in and out (stdin and stdout for
// `ptyhub mcp`) until in ends (returns nil) or ctx ends (returns ctx.Err()).
func Run(ctx context.Context, svc session.Service, in io.Reader, out io.Writer, opts Options) error {
	return New(svc, opts).Serve(ctx, &LineTransport{In: in, Out: out, Logger: opts.Logger})
}

// listInput is list_sessions' input: no arguments (unknown ones are rejected).
type listInput struct{}

func (s *Server) addTools() {
	f, t := new(bool), new(bool)
	*t = true
	addTool(s, &mcp.Tool{
		Name: "exec_command", Title: "Run a command on a terminal", Description: descExec,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: t, OpenWorldHint: t},
	}, s.svc.Exec)
	addTool(s, &mcp.Tool{
		Name: "write_stdin", Title: "Type into a session", Description: descWrite,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: t, OpenWorldHint: t},
	}, s.svc.Write)
	addTool(s, &mcp.Tool{
		Name: "read_output", Title: "Re-read a session's output", Description: descRead,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: f},
	}, s.svc.Read)
	addTool(s, &mcp.Tool{
		Name: "list_sessions", Title: "List sessions", Description: descList,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: f},
	}, func(ctx context.Context, _ listInput) (*session.ListResult, error) { return s.svc.List(ctx) })
	addTool(s, &mcp.Tool{
		Name: "kill_session", Title: "Stop a session or send it a signal", Description: descKill,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: t, OpenWorldHint: f},
	}, s.svc.Kill)
	addTool(s, &mcp.Tool{
		Name: "resize_session", Title: "Resize a session's terminal", Description: descResize,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: f, IdempotentHint: true, OpenWorldHint: f},
	}, s.svc.Resize)
	addTool(s, &mcp.Tool{
		Name: "wait_sessions", Title: "Wait for the first of several sessions", Description: descWait,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: f},
	}, s.svc.Wait)
	addTool(s, &mcp.Tool{
		Name: "ask_human", Title: "Ask a person to take over a session", Description: descAsk,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: f, OpenWorldHint: t},
	}, s.askHuman)
}

// inputSchema is the schema of T as the SDK would derive it, with optional fields typed
// plainly ("integer", not ["null","integer"]): some clients turn a type list into its
// first member, "null". A null argument still means "absent" (see normalizeArguments).
func inputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("input schema of %T: %v", *new(T), err))
	}
	dropNull(s)
	return s
}

func dropNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		dropNull(p)
	}
	dropNull(s.Items)
	dropNull(s.AdditionalProperties)
}

// toolArgs returns each tool's argument names, for argument errors. The table is built
// on the first argument error (by reflection over the request types), not while the
// package initialises: every command of the binary runs this package's initialisation,
// and only a call with wrong arguments needs it. (A sync.Once, not sync.OnceValue, whose
// closure would be allocated at initialisation.)
func toolArgs() map[string]string {
	toolArgsOnce.Do(func() {
		toolArgsTable = map[string]string{
			"exec_command":   argNames[session.ExecRequest](),
			"write_stdin":    argNames[session.WriteRequest](),
			"read_output":    argNames[session.ReadRequest](),
			"list_sessions":  "none",
			"kill_session":   argNames[session.KillRequest](),
			"resize_session": argNames[session.ResizeRequest](),
			"wait_sessions":  argNames[session.WaitRequest](),
			"ask_human":      argNames[session.AskRequest](),
		}
	})
	return toolArgsTable
}

var (
	toolArgsOnce  sync.Once
	toolArgsTable map[string]string // written once, by toolArgs
)

func argNames[T any]() string {
	rt := reflect.TypeFor[T]()
	var names []string
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// explainArgumentErrors rewrites the SDK's schema errors ("validating \"arguments\":
// validating root: unexpected additional properties [\"yield_ms\"]") into a sentence that
// names the tool and lists the arguments it takes, so a model can correct the call.
func (s *Server) explainArgumentErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			if creq, ok := req.(*mcp.CallToolRequest); ok && creq.Params != nil {
				var ignored []string
				creq.Params.Arguments, ignored = normalizeArguments(creq.Params.Name, creq.Params.Arguments)
				if len(ignored) > 0 {
					ctx = context.WithValue(ctx, ignoredKey{}, ignored)
				}
			}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, wellFormed(err)
		}
		if method != "tools/call" {
			return res, err
		}
		ctr, ok := res.(*mcp.CallToolResult)
		creq, ok2 := req.(*mcp.CallToolRequest)
		if !ok || !ok2 || !ctr.IsError || len(ctr.Content) == 0 || creq.Params == nil {
			return res, err
		}
		tc, ok := ctr.Content[0].(*mcp.TextContent)
		if !ok {
			return res, err
		}
		detail, found := strings.CutPrefix(tc.Text, `validating "arguments": `)
		if !found && !strings.HasPrefix(tc.Text, "json: ") && !strings.HasPrefix(tc.Text, "unmarshaling") {
			return res, err
		}
		detail = strings.TrimPrefix(detail, "validating root: ")
		name := creq.Params.Name
		tc.Text = fmt.Sprintf("Invalid arguments for %s: %s. Its arguments are: %s.", name, detail, toolArgs()[name])
		return res, err
	}
}

// wellFormed returns err with its data made valid JSON: the SDK builds the data of
// resource-not-found errors with %q, which is not JSON for a URI holding control
// characters (a NUL, ESC or DEL), and a response that cannot be encoded would otherwise
// cost the client its answer.
func wellFormed(err error) error {
	var we *jsonrpc.Error
	if !errors.As(err, &we) || len(we.Data) == 0 || json.Valid(we.Data) {
		return err
	}
	var data struct {
		URI string `json:"uri"`
	}
	if s, ok := strings.CutPrefix(string(we.Data), `{"uri":`); ok {
		if u, err := strconv.Unquote(strings.TrimSuffix(s, "}")); err == nil {
			data.URI = u
		}
	}
	fixed := *we
	fixed.Data, _ = json.Marshal(data)
	if data.URI == "" {
		fixed.Data = nil
	}
	return &fixed
}

// codexExec lists the arguments of Codex's own exec_command that ptyhub has no use for
// (its sandbox and approval requests): they are accepted and ignored with a warning, so
// a model trained on Codex is not refused. Any other unknown argument is still an error.
var codexExec = []string{"sandbox_permissions", "justification", "prefix_rule", "additional_permissions", "environment_id"}

// codexOnly returns the Codex-only arguments of tool (a slice literal, not a map built
// while the package initialises).
func codexOnly(tool string) []string {
	if tool == "exec_command" {
		return codexExec
	}
	return nil
}

// ignoredKey is the context key of the arguments normalizeArguments dropped.
type ignoredKey struct{}

// normalizeArguments forgives habits of models before the schema judges the arguments: a
// top-level null means the argument is absent (the default applies); a session_id given
// as a JSON number is its string (Codex's own write_stdin takes a number, and models
// trained on it send one); Codex-only arguments of tool (codexOnly) are dropped and
// returned, sorted.
func normalizeArguments(tool string, args json.RawMessage) (json.RawMessage, []string) {
	extra := codexOnly(tool)
	hasExtra := false
	for _, k := range extra {
		if bytes.Contains(args, []byte(`"`+k+`"`)) {
			hasExtra = true
		}
	}
	if !hasExtra && !bytes.Contains(args, []byte("null")) && !numericID(args) {
		return args, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return args, nil
	}
	changed := false
	var ignored []string
	for _, k := range extra {
		if _, ok := m[k]; ok {
			delete(m, k)
			ignored = append(ignored, k)
			changed = true
		}
	}
	sort.Strings(ignored)
	for k, v := range m {
		if string(v) == "null" {
			delete(m, k)
			changed = true
		}
	}
	if id, ok := m["session_id"]; ok && len(id) > 0 && id[0] >= '0' && id[0] <= '9' {
		var n uint64
		if json.Unmarshal(id, &n) == nil {
			m["session_id"], _ = json.Marshal(strconv.FormatUint(n, 10))
			changed = true
		}
	}
	if ids, ok := m["session_ids"]; ok && bytes.ContainsAny(ids, "0123456789") {
		// wait_sessions: numbers in the list are ids too.
		var list []json.RawMessage
		if json.Unmarshal(ids, &list) == nil {
			for i, id := range list {
				var n uint64
				if len(id) > 0 && id[0] >= '0' && id[0] <= '9' && json.Unmarshal(id, &n) == nil {
					list[i], _ = json.Marshal(strconv.FormatUint(n, 10))
					changed = true
				}
			}
			m["session_ids"], _ = json.Marshal(list)
		}
	}
	if !changed {
		return args, ignored
	}
	out, err := json.Marshal(m)
	if err != nil {
		return args, ignored
	}
	return out, ignored
}

// numericID reports whether args may give a session id as a number: a "session_id" key
// whose value starts with a digit, or a "session_ids" list. It looks at the bytes only
// (a key inside a string value can make it say yes; then normalizeArguments decodes the
// arguments to find out), so that the common call, with its id as a string, is not
// decoded twice.
func numericID(args []byte) bool {
	if bytes.Contains(args, []byte(`"session_ids"`)) {
		return true
	}
	key := []byte(`"session_id"`)
	for rest := args; ; {
		i := bytes.Index(rest, key)
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len(key):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			v := bytes.TrimLeft(rest[1:], " \t\r\n")
			if len(v) > 0 && v[0] >= '0' && v[0] <= '9' {
				return true
			}
		}
	}
}

// requestKey carries a tool call's request in its context (ask_human elicits through
// its session).
type requestKey struct{}

// texter is every result type: it renders itself for the model.
type texter interface{ Text() string }

// handler adapts a service method to a typed SDK tool handler: a concurrency slot, a
// context that also ends at shutdown, the text body, and errors a model can act on.
func handler[In any, Out texter](s *Server, call func(context.Context, In) (Out, error)) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		if c, ok := any(in).(interface{ CheckSizes() error }); ok {
			// Before anything else is done with the arguments.
			if err := c.CheckSizes(); err != nil {
				return nil, zero, toolError(err)
			}
		}
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		default:
			return nil, zero, fmt.Errorf("too many tool calls in flight (%d); wait for some to return and call again", s.opts.MaxInFlight)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(s.base, cancel)
		defer stop()

		ctx = context.WithValue(ctx, requestKey{}, req)
		stopProgress := s.progress(ctx, req, in)
		out, err := call(ctx, in)
		stopProgress()
		if err == nil && isNil(out) {
			err = errors.New("the service returned no result")
		}
		if err != nil {
			s.log.Debug("mcp: tool error", "tool", req.Params.Name, "error", err)
			return nil, zero, toolError(err)
		}
		if ignored, _ := ctx.Value(ignoredKey{}).([]string); len(ignored) > 0 {
			if w, ok := any(out).(interface{ AddWarning(string) }); ok {
				w.AddWarning(fmt.Sprintf("ignored %s: Codex's sandbox and approval arguments; ptyhub runs the command as is", strings.Join(ignored, ", ")))
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Text()}}}, out, nil
	}
}

func isNil(v any) bool {
	rv := reflect.ValueOf(v)
	return !rv.IsValid() || rv.Kind() == reflect.Pointer && rv.IsNil()
}

// toolError turns a service error into the text of a tool error: the service's sentence,
// plus what to do next where the error kind says it.
func toolError(err error) error {
	msg := err.Error()
	var hint, keyword string // keyword: the hint is left out when the message has it
	switch {
	case errors.Is(err, session.ErrNotFound):
		hint, keyword = "Call list_sessions to see the sessions that exist.", "list_sessions"
	case errors.Is(err, session.ErrExited) && strings.Contains(msg, session.ExitedUnread):
		hint, keyword = "Poll it with write_stdin without input to get that output.", "write_stdin"
	case errors.Is(err, session.ErrExited):
		hint, keyword = "Read its output with read_output, or start a new session with exec_command.", "read_output"
	case errors.Is(err, session.ErrLimit):
		hint, keyword = "End sessions you no longer need with kill_session (remove: true), then try again.", "kill_session"
	case errors.Is(err, session.ErrInvalid):
		hint, keyword = "Fix the argument and call again.", "Fix the argument"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		msg = "the call was cancelled (" + msg + ")"
	default:
		msg = "ptyhub error: " + msg
	}
	if hint != "" && !strings.Contains(msg, keyword) {
		msg = strings.TrimRight(msg, ". ") + ". " + hint
	}
	return errors.New(msg)
}
