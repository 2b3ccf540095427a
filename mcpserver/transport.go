package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLine is the longest request line the stdio transport accepts: the largest
// call the tools allow (1 MiB of input, every byte escaped as \u00XX, and the other
// arguments) fits. A longer line is discarded as it is read, so its size costs nothing;
// one under the limit costs a few times its size while it is decoded.
const DefaultMaxLine = 8 << 20

// LineTransport is an MCP transport over newline-delimited JSON-RPC on a reader and a
// writer (stdin and stdout for `ptyhub mcp`).
//
// Unlike the SDK's StdioTransport, no input ends the connection but the end of the
// input, and no output that fails to encode does:
//
//   - a line that is not JSON is answered with a parse error (-32700, id null); a JSON
//     value that is not a JSON-RPC message, a batch, or a request with a null id with
//     -32600; a line longer than MaxLine is discarded up to its newline and answered
//     with -32600, with the request's id when it can be read from the line's start;
//     then serving goes on.
//   - Request ids are echoed byte for byte: the server behind the transport sees ids
//     of the transport's own (1, 2, 3…), and each response gets the client's id back as
//     the client wrote it (a 30-digit number, 1.5, "\u0041"), where the SDK would turn
//     numbers into int64. A request reusing the id of one still unanswered is refused
//     with -32600. notifications/cancelled is translated the same way.
//   - A response that cannot be encoded (a result or error holding invalid JSON) is
//     replaced by an internal error (-32603) for its id; any other message that cannot be
//     encoded is dropped and logged. A failed write is returned only when the output
//     itself fails.
//   - At the end of the input, every request read is answered before the connection
//     reports io.EOF: InputEnded lets the server end the calls still waiting, so they
//     answer with what they have.
type LineTransport struct {
	In  io.Reader
	Out io.Writer
	// MaxLine bounds one request line in bytes (default DefaultMaxLine).
	MaxLine int
	// Logger receives messages dropped because they could not be encoded (default:
	// discard).
	Logger *slog.Logger

	ended chan struct{} // made by Connect; closed when the input has ended
	conn  *lineConn     // made by Connect

	// calls, when set (by Server.Serve, before Connect), is offered every tools/call
	// request: ok true means it serves the call whole (run is called in a goroutine of
	// the transport's, and its result — compact JSON — or error is sent as the
	// response, with the client's id); ok false leaves the call to the server behind the
	// transport.
	calls func(params json.RawMessage) (run func(context.Context) (json.RawMessage, error), ok bool)
}

// InputEnded returns a channel closed when the input has ended (after Connect; nil
// before). Requests read before the end are still answered: the connection's Read
// reports io.EOF once each has its response written.
func (t *LineTransport) InputEnded() <-chan struct{} { return t.ended }

// Connect implements mcp.Transport. It starts the reading goroutine.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t.ended = make(chan struct{})
	c := &lineConn{
		in:       t.In,
		out:      t.Out,
		log:      log,
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
		ended:    t.ended,
		answered: make(chan struct{}, 1),
		pending:  map[int64]json.RawMessage{},
		byRaw:    map[string]int64{},
		calls:    t.calls,
		fast:     map[int64]context.CancelFunc{},
	}
	t.conn = c
	// The reading goroutine owns t.In. It stops at the end or an error of the input, or
	// when the connection is closed (then at its next delivery; a Read blocked on an
	// input that cannot be closed, such as a terminal on stdin, stays blocked until the
	// process exits — nothing waits for it). Before it runs a call the transport serves
	// itself, it hands the input on to another reading goroutine (readLoop).
	go c.readLoop(&lineReader{br: bufio.NewReaderSize(c.in, 64<<10), max: max})
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	in  io.Reader
	out io.Writer
	log *slog.Logger
	wmu sync.Mutex // one whole line per write, in order

	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once
	ended     chan struct{} // closed by readLoop at the end of the input
	answered  chan struct{} // capacity 1: a pending request was answered

	// The requests delivered and not yet answered, by the id the server sees (the
	// transport's own) and by the client's id as written. Lock order: mu, then wmu.
	mu      sync.Mutex
	nextID  int64
	pending map[int64]json.RawMessage // our id → the client's raw id
	byRaw   map[string]int64          // the client's raw id → our id

	// The calls the transport serves itself (LineTransport.calls): each runs on the
	// goroutine that read it (readLoop), counted in served, and ends when its handler
	// returns (its context is cancelled by the client's notifications/cancelled). fast
	// holds the cancel function of each one running, by our id (under mu); such a call
	// is in pending too, so the input's end waits for its answer.
	calls     func(params json.RawMessage) (run func(context.Context) (json.RawMessage, error), ok bool)
	fast      map[int64]context.CancelFunc
	served    sync.WaitGroup
	fastCalls atomic.Int64 // how many calls the transport served itself

	// waiting holds the channel of each reading goroutine that served its call and waits
	// to take the input over (at most maxSpares; park, handOn). Guarded by spareMu,
	// which is held for no other lock.
	spareMu sync.Mutex
	waiting []chan *lineReader
}

// maxSpares bounds the reading goroutines that wait, their call served, to take the
// input over: one is enough for calls one after another; a few concurrent calls leave a
// few.
const maxSpares = 2

// waitCalls returns when every call the transport serves itself has answered (after
// Connect; at once before).
func (t *LineTransport) waitCalls() {
	if t.conn != nil {
		t.conn.served.Wait()
	}
}

// fastCall is a call the transport serves itself, read and registered (in pending, fast
// and served) and not yet run.
type fastCall struct {
	ctx    context.Context
	cancel context.CancelFunc
	n      int64 // our id
	run    func(context.Context) (json.RawMessage, error)
}

// serveCall runs a call the transport serves itself and writes its response.
func (c *lineConn) serveCall(f *fastCall) {
	defer c.served.Done()
	res, err := f.run(f.ctx)
	f.cancel()
	c.mu.Lock()
	delete(c.fast, f.n)
	c.mu.Unlock()
	id, _ := jsonrpc.MakeID(float64(f.n))
	if err == nil && c.writeResult(id, res) {
		return
	}
	// A failed write is the output's failure; the SDK's own next write reports it.
	_ = c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: res, Error: err})
}

// writeResult writes the response of a call the transport served, whose result res is
// compact JSON, as Write would write it (the SDK's encoding leaves compact JSON as it
// is), in one line made once. False: not a request of the client's this transport
// delivered, or no result; nothing was written (Write says what to do).
func (c *lineConn) writeResult(id jsonrpc.ID, res json.RawMessage) bool {
	if len(res) == 0 {
		return false
	}
	raw := c.answer(id)
	if raw == nil {
		return false
	}
	line := make([]byte, 0, len(raw)+len(res)+len(`{"jsonrpc":"2.0","id":,"result":}`)+1)
	line = append(append(line, `{"jsonrpc":"2.0","id":`...), raw...)
	line = append(append(append(line, `,"result":`...), res...), '}')
	// A failed write is the output's failure; the SDK's own next write reports it.
	_ = c.writeLine(line)
	c.settle()
	return true
}

func (c *lineConn) SessionID() string { return "" }

// Read returns the next JSON-RPC message, io.EOF at the end of the input or after Close.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write writes msg as one line. A response goes out with the client's id of its request.
// A message that cannot be encoded is not an error of the connection: a response
// becomes an internal error for its id, anything else is dropped (and logged).
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, isResp := msg.(*jsonrpc.Response)
	var raw json.RawMessage
	if isResp {
		raw = c.answer(resp.ID)
		if raw != nil {
			// Settled before the write: the input's end waits for it, and a write to a
			// broken output does not answer anything again.
			defer c.settle()
		}
	}
	// A json.RawMessage inside that is not JSON (the SDK's resource-not-found error quotes
	// the URI with %q) is an error of the encoder, which checks every one.
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		if !isResp {
			c.log.Warn("mcp: dropped a message that cannot be encoded as JSON", "err", err)
			return nil
		}
		c.log.Warn("mcp: a response cannot be encoded as JSON; answering with an internal error", "err", err)
		id := raw
		if id == nil {
			id, _ = json.Marshal(resp.ID.Raw())
		}
		return c.writeLine(errorLine(id, jsonrpc.CodeInternalError,
			"internal error: the response could not be encoded as JSON ("+err.Error()+")"))
	}
	if raw != nil {
		data = withID(data, resp.ID, raw)
	}
	return c.writeLine(data)
}

// answer returns the client's raw id of the request the server knows by id, and forgets
// the request (nil: not a request of the client's this transport delivered).
func (c *lineConn) answer(id jsonrpc.ID) json.RawMessage {
	n, ok := id.Raw().(int64)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	raw, ok := c.pending[n]
	if !ok {
		return nil
	}
	delete(c.pending, n)
	delete(c.byRaw, string(raw))
	return raw
}

// settle tells the input's end that a request was answered.
func (c *lineConn) settle() {
	select {
	case c.answered <- struct{}{}:
	default:
	}
}

// withID returns the encoded response data with its id (ours) replaced by raw.
func withID(data []byte, ours jsonrpc.ID, raw json.RawMessage) []byte {
	// The SDK writes "jsonrpc" then "id" first.
	id, _ := json.Marshal(ours.Raw())
	head := `{"jsonrpc":"2.0","id":` + string(id)
	if rest, ok := bytes.CutPrefix(data, []byte(head)); ok && len(rest) > 0 && (rest[0] == ',' || rest[0] == '}') {
		out := make([]byte, 0, len(data)-len(id)+len(raw)+1) // +1: writeLine's newline
		out = append(append(append(out, `{"jsonrpc":"2.0","id":`...), raw...), rest...)
		return out
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	m["id"] = raw
	if out, err := json.Marshal(m); err == nil {
		return out
	}
	return data
}

// writeLine writes data and a newline in one write. data is the caller's to give: its
// spare capacity, when it has some, takes the newline (no copy of the line).
func (c *lineConn) writeLine(data []byte) error {
	line := append(data, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.out.Write(line)
	return err
}

// Close stops delivering messages and closes the input when it can be closed.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if cl, ok := c.in.(io.Closer); ok {
			cl.Close()
		}
	})
	return nil
}

func (c *lineConn) deliver(r readResult) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

// drain waits until every request delivered has been answered, or the connection is
// closed. Called once the input has ended.
func (c *lineConn) drain() {
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-c.closed:
			return
		}
	}
}

// idPeek is how much of a line too long to read is kept to find its request id.
const idPeek = 4 << 10

// peekID returns the top-level "id" of a JSON object cut short, when the id comes
// before the cut (nil otherwise). Only a string or a number is an id.
func peekID(head []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if k == "id" {
			if usableID(v) {
				return v
			}
			return nil
		}
	}
	return nil
}

// usableID reports whether raw is a JSON string or number (what a request id may be).
func usableID(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '"' || raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// lineReader is the input's read state, owned by one reading goroutine at a time and
// handed on with the input.
type lineReader struct {
	br   *bufio.Reader
	max  int    // MaxLine
	line []byte // the line being read (its buffer kept for the next)
	head []byte // the start of a line found too long, to read its id from
}

// readLoop reads lines and delivers decoded messages; it answers bad lines itself.
//
// A call the transport serves itself is run by the goroutine that read it: that
// goroutine first hands r (the input and its buffered bytes) on to another reading
// goroutine (handOn), so the next lines are read while the call runs, then serves the
// call. The call thus starts at once, without waiting for another goroutine to be
// scheduled; the other reader's start is off its path. Its call served, the goroutine
// waits to take the input over in turn (park), so calls one after another pass the
// input between two goroutines instead of starting one per call. One goroutine reads at
// a time: the one that hands r on stops touching it.
func (c *lineConn) readLoop(r *lineReader) {
	var park chan *lineReader // this goroutine's, for park
	for {
		r.line = r.line[:0]
		tooLong := false
		var err error
		for {
			var frag []byte
			frag, err = r.br.ReadSlice('\n')
			if !tooLong {
				if len(r.line)+len(frag) > r.max {
					tooLong = true
					if len(r.line) < idPeek {
						r.line = append(r.line, frag[:min(len(frag), idPeek-len(r.line))]...)
					}
					r.head = append(r.head[:0], r.line[:min(len(r.line), idPeek)]...)
					r.line = r.line[:0]
				} else {
					r.line = append(r.line, frag...)
				}
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			c.deliver(readResult{err: err})
			return
		}
		var call *fastCall
		if tooLong {
			c.replyError(peekID(r.head), jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("request line longer than the limit of %d bytes, discarded; send large data in a file and pass its name", r.max))
		} else if msg, f, ok := c.decode(r.line); f != nil {
			call = f
		} else if ok {
			if !c.deliver(readResult{msg: msg}) {
				return
			}
		}
		if cap(r.line) > 1<<20 {
			r.line = nil // a rare big line's buffer is not kept for the next ones
		}
		if err == io.EOF {
			if call != nil {
				go c.serveCall(call) // answered before drain returns
			}
			close(c.ended)
			c.drain()
			c.deliver(readResult{err: io.EOF})
			return
		}
		select {
		case <-c.closed:
			if call != nil {
				c.serveCall(call)
			}
			return
		default:
		}
		if call != nil {
			c.handOn(r)
			c.serveCall(call)
			if park == nil {
				park = make(chan *lineReader, 1)
			}
			if r = c.park(park); r == nil {
				return
			}
		}
	}
}

// handOn gives the input's read state r to a reading goroutine waiting in park, or
// starts one with it. A goroutine is listed as waiting before it blocks, and taken off
// the list by the one that hands it the input, so the list is exact: a goroutine that
// served its call is always found by the next call's handOn, never passed over for a
// new one.
func (c *lineConn) handOn(r *lineReader) {
	c.spareMu.Lock()
	if n := len(c.waiting); n > 0 {
		ch := c.waiting[n-1]
		c.waiting = c.waiting[:n-1]
		c.spareMu.Unlock()
		ch <- r // buffered: never blocks
		return
	}
	c.spareMu.Unlock()
	go c.readLoop(r)
}

// park waits, in a goroutine whose call was served, for the input's read state to
// read on with; nil when maxSpares already wait (the goroutine ends), or once the
// connection is closed or the input has ended. ch is the goroutine's own channel
// (capacity 1), reused from one park to the next.
func (c *lineConn) park(ch chan *lineReader) *lineReader {
	c.spareMu.Lock()
	if len(c.waiting) >= maxSpares {
		c.spareMu.Unlock()
		return nil
	}
	c.waiting = append(c.waiting, ch)
	c.spareMu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-c.closed:
	case <-c.ended:
	}
	c.spareMu.Lock()
	for i, w := range c.waiting {
		if w == ch {
			c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
			break
		}
	}
	c.spareMu.Unlock()
	return nil
}

// decode parses one line. Blank lines are skipped; bad ones are answered here. A call
// the transport serves itself is returned as f (registered, for the caller to run with
// serveCall); any other message as msg with ok true.
func (c *lineConn) decode(line []byte) (msg jsonrpc.Message, f *fastCall, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil, false
	}
	if !json.Valid(line) {
		c.replyError(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
		return nil, nil, false
	}
	if line[0] == '[' {
		c.replyError(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported")
		return nil, nil, false
	}
	if bytes.Contains(line, []byte("null")) && nullIDRequest(line) {
		// The SDK would take it for a notification and never answer; MCP forbids a null
		// request id, and JSON-RPC answers an invalid request with -32600.
		c.replyError(nil, jsonrpc.CodeInvalidRequest, "invalid request: the id must be a string or a number, not null")
		return nil, nil, false
	}
	msg, rawID, err := decodeMessage(line)
	if err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(line, &probe)
		id := probe.ID
		if !usableID(id) {
			id = nil // not a usable id: answer with null
		}
		c.replyError(id, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, nil, false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg, nil, true // a response to the server's own request: its id is the server's
	}
	if rawID != nil {
		// A call: the server sees an id of ours; the response gets rawID back.
		c.mu.Lock()
		if _, dup := c.byRaw[string(rawID)]; dup {
			c.mu.Unlock()
			c.replyError(rawID, jsonrpc.CodeInvalidRequest, "invalid request: id "+string(rawID)+" is already used by a request still in progress")
			return nil, nil, false
		}
		c.nextID++
		n := c.nextID
		c.pending[n] = rawID
		c.byRaw[string(rawID)] = n
		c.mu.Unlock()
		req.ID, _ = jsonrpc.MakeID(float64(n))
		if req.Method == "tools/call" && c.calls != nil {
			if run, ok := c.calls(req.Params); ok {
				ctx, cancel := context.WithCancel(context.Background())
				c.mu.Lock()
				c.fast[n] = cancel
				c.mu.Unlock()
				c.served.Add(1)
				c.fastCalls.Add(1)
				return nil, &fastCall{ctx: ctx, cancel: cancel, n: n, run: run}, false
			}
		}
		return req, nil, true
	}
	if req.Method == "notifications/cancelled" {
		msg, ok := c.cancelled(req)
		return msg, nil, ok
	}
	return req, nil, true
}

// cancelled translates a cancellation's requestId to the id the server knows. The
// cancellation of a request that is not pending (answered already, or never seen) is
// dropped: there is nothing to cancel.
func (c *lineConn) cancelled(req *jsonrpc.Request) (jsonrpc.Message, bool) {
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil {
		return nil, false
	}
	c.mu.Lock()
	n, ok := c.byRaw[string(bytes.TrimSpace(params["requestId"]))]
	cancel, served := c.fast[n]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	if served {
		cancel() // a call the transport serves: it answers as the SDK's would
		return nil, false
	}
	params["requestId"] = json.RawMessage(strconv.FormatInt(n, 10))
	p, err := json.Marshal(params)
	if err != nil {
		return nil, false
	}
	req.Params = p
	return req, true
}

// nullIDRequest reports whether line is a request (it has a method) whose id is null.
func nullIDRequest(line []byte) bool {
	var probe struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return false
	}
	return probe.Method != nil && string(probe.ID) == "null"
}

// replyError writes an error response for a line that never reached the server. id nil
// means null (the request's id could not be read).
func (c *lineConn) replyError(id json.RawMessage, code int, message string) {
	// A broken writer is reported by the connection's own next write.
	_ = c.writeLine(errorLine(id, code, message))
}

// errorLine is an error response; id nil means null.
func errorLine(id json.RawMessage, code int, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: message}})
	if err != nil {
		// Only id can fail, and every id here was read as JSON.
		data = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return data
}

// decodeMessage decodes one JSON-RPC message as jsonrpc.DecodeMessage does (a "method"
// key makes it a request, else it is a response and needs an id; the version must be
// "2.0"; object keys are matched exactly), with encoding/json: the SDK's decoder
// allocates a 32 KiB buffer for every message. A request's id is not decoded: it is
// returned as written (nil for a notification), and must be a string or a number.
func decodeMessage(line []byte) (jsonrpc.Message, json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var version string
	if raw, ok := m["jsonrpc"]; ok {
		if err := json.Unmarshal(raw, &version); err != nil {
			return nil, nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	if version != "2.0" {
		return nil, nil, fmt.Errorf("invalid message version tag %q; expected %q", version, "2.0")
	}
	if raw, ok := m["method"]; ok {
		var method string
		if err := json.Unmarshal(raw, &method); err != nil {
			return nil, nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		rawID := bytes.TrimSpace(m["id"])
		if len(rawID) > 0 && !usableID(rawID) {
			return nil, nil, errors.New("the id must be a string or a number")
		}
		if len(rawID) == 0 {
			rawID = nil
		}
		return &jsonrpc.Request{Method: method, Params: m["params"]}, rawID, nil
	}
	var idv any
	if raw, ok := m["id"]; ok {
		if err := json.Unmarshal(raw, &idv); err != nil {
			return nil, nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(idv)
	if err != nil {
		return nil, nil, err
	}
	if !id.IsValid() {
		return nil, nil, errors.New("JSON RPC invalid request")
	}
	resp := &jsonrpc.Response{ID: id, Result: m["result"]}
	if raw, ok := m["error"]; ok && string(raw) != "null" {
		var we jsonrpc.Error
		if err := json.Unmarshal(raw, &we); err != nil {
			return nil, nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		resp.Error = &we
	}
	return resp, nil, nil
}
