package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLine is the longest request line the stdio transport accepts (EDGE 65).
const DefaultMaxLine = 16 << 20

// LineTransport is an MCP transport over newline-delimited JSON-RPC on a reader and a
// writer (stdin and stdout for `ptyhub mcp`).
//
// Unlike the SDK's StdioTransport, a bad line does not end the connection (EDGE 64, 65):
// a line that is not JSON is answered with a parse error (-32700, id null); a JSON value
// that is not a JSON-RPC message, a batch, or a request with a null id with -32600; a
// line longer than MaxLine is discarded up to its newline and answered with -32600; then
// serving goes on.
type LineTransport struct {
	In  io.Reader
	Out io.Writer
	// MaxLine bounds one request line in bytes (default DefaultMaxLine).
	MaxLine int
}

// Connect implements mcp.Transport. It starts the reading goroutine.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	c := &lineConn{
		in:       t.In,
		out:      t.Out,
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
	}
	// The reading goroutine owns t.In. It stops at the end or an error of the input, or
	// when the connection is closed (then at its next delivery; a Read blocked on an
	// input that cannot be closed, such as a terminal on stdin, stays blocked until the
	// process exits — nothing waits for it).
	go c.readLoop(max)
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	in  io.Reader
	out io.Writer
	wmu sync.Mutex // one whole line per write, in order

	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once
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

// Write writes msg as one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	return c.writeLine(data)
}

func (c *lineConn) writeLine(data []byte) error {
	line := make([]byte, 0, len(data)+1)
	line = append(append(line, data...), '\n')
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

// readLoop reads lines and delivers decoded messages; it answers bad lines itself.
func (c *lineConn) readLoop(max int) {
	br := bufio.NewReaderSize(c.in, 64<<10)
	var line []byte
	for {
		line = line[:0]
		tooLong := false
		var err error
		for {
			var frag []byte
			frag, err = br.ReadSlice('\n')
			if !tooLong {
				if len(line)+len(frag) > max {
					tooLong = true
					line = line[:0]
				} else {
					line = append(line, frag...)
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
		if tooLong {
			c.replyError(nil, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("request line longer than %d bytes discarded", max))
		} else if msg, ok := c.decode(line); ok {
			if !c.deliver(readResult{msg: msg}) {
				return
			}
		}
		if err == io.EOF {
			c.deliver(readResult{err: io.EOF})
			return
		}
		select {
		case <-c.closed:
			return
		default:
		}
	}
}

// decode parses one line. Blank lines are skipped; bad ones are answered here.
func (c *lineConn) decode(line []byte) (jsonrpc.Message, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false
	}
	if !json.Valid(line) {
		c.replyError(nil, jsonrpc.CodeParseError, "parse error: the line is not valid JSON")
		return nil, false
	}
	if line[0] == '[' {
		c.replyError(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not supported")
		return nil, false
	}
	if bytes.Contains(line, []byte("null")) && nullIDRequest(line) {
		// The SDK would take it for a notification and never answer; MCP forbids a null
		// request id, and JSON-RPC answers an invalid request with -32600.
		c.replyError(nil, jsonrpc.CodeInvalidRequest, "invalid request: the id must be a string or a number, not null")
		return nil, false
	}
	msg, err := decodeMessage(line)
	if err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(line, &probe)
		id := probe.ID
		if len(id) == 0 || (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
			id = nil // not a usable id: answer with null
		}
		c.replyError(id, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, false
	}
	return msg, true
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
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: message}})
	if err != nil {
		return
	}
	// A broken writer is reported by the connection's own next write.
	_ = c.writeLine(data)
}

// decodeMessage decodes one JSON-RPC message as jsonrpc.DecodeMessage does (a "method"
// key makes it a request, else it is a response and needs an id; the version must be
// "2.0"; object keys are matched exactly), with encoding/json: the SDK's decoder
// allocates a 32 KiB buffer for every message.
func decodeMessage(line []byte) (jsonrpc.Message, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var version string
	if raw, ok := m["jsonrpc"]; ok {
		if err := json.Unmarshal(raw, &version); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	if version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", version, "2.0")
	}
	var idv any
	if raw, ok := m["id"]; ok {
		if err := json.Unmarshal(raw, &idv); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(idv)
	if err != nil {
		return nil, err
	}
	if raw, ok := m["method"]; ok {
		var method string
		if err := json.Unmarshal(raw, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: m["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("JSON RPC invalid request")
	}
	resp := &jsonrpc.Response{ID: id, Result: m["result"]}
	if raw, ok := m["error"]; ok && string(raw) != "null" {
		var we jsonrpc.Error
		if err := json.Unmarshal(raw, &we); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		resp.Error = &we
	}
	return resp, nil
}
