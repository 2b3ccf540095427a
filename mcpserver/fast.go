package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path: LineTransport serves a tools/call it can answer whole without handing it
// to the SDK, whose request path decodes every call's params twice through a decoder
// that makes a fresh 32 KiB buffer for each value (two thirds of what a call allocated).
// The fast path decodes the params once with encoding/json and runs exactly what the
// SDK would run for them: the receiving middleware (explainArgumentErrors), the tool's
// handler registered with addTool (schema validation, the same handler, the same
// results), with a request whose Session is the live ServerSession, so progress
// notifications and ask_human's elicitation go out as before (and the elicitation's
// answer comes back through the SDK's read loop).
//
// Only the common case is taken: a call of a known tool once the session is initialized,
// with params holding nothing but "name" (a string), "arguments" (an object) and
// "_meta" (an object without the per-request protocol version of the sessionless
// protocol, whose results the SDK annotates). Anything else — an unknown tool, odd
// params, a call before initialize, every other method — goes to the SDK unchanged, so
// its answers (errors included) stay the SDK's own.

// maxParamsDepth is the nesting the SDK's decoder refuses beyond; deeper params go to
// the SDK so that the refusal stays its own.
const maxParamsDepth = 1000

// fastCall returns how to serve a tools/call with these params, or ok false to leave the
// call to the SDK. It only decodes; the call runs when run is called (in its own
// goroutine, with a context the transport cancels on notifications/cancelled).
func (s *Server) fastCall(ss *mcp.ServerSession, params json.RawMessage) (run func(context.Context) (mcp.Result, error), ok bool) {
	if ss == nil || s.sdkOnly || ss.InitializeParams() == nil {
		return nil, false
	}
	p, ok := decodeCallParams(params)
	if !ok {
		return nil, false
	}
	h, ok := s.tools[p.Name]
	if !ok {
		return nil, false
	}
	req := &mcp.CallToolRequest{Session: ss, Params: p}
	return func(ctx context.Context) (mcp.Result, error) {
		return s.explainArgumentErrors(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
			// As the SDK's own tools/call: the handler's result, with an empty content
			// list rather than null.
			res, err := h(ctx, req)
			if err == nil && res != nil && res.Content == nil {
				res2 := *res
				res2.Content = []mcp.Content{}
				res = &res2
			}
			if res == nil {
				return nil, err // not a typed nil in the interface
			}
			return res, err
		})(ctx, "tools/call", req)
	}, true
}

// decodeCallParams decodes a tools/call's params when they hold only what the fast path
// serves (see above).
func decodeCallParams(params json.RawMessage) (*mcp.CallToolParamsRaw, bool) {
	params = bytes.TrimSpace(params)
	if len(params) == 0 || params[0] != '{' || deeperThan(params, maxParamsDepth) {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return nil, false
	}
	p := &mcp.CallToolParamsRaw{}
	for k, v := range m {
		switch k {
		case "name":
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &p.Name) != nil {
				return nil, false
			}
		case "arguments":
			if len(v) == 0 || v[0] != '{' {
				return nil, false
			}
			p.Arguments = v
		case "_meta":
			if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &p.Meta) != nil {
				return nil, false
			}
			if _, ok := p.Meta[mcp.MetaKeyProtocolVersion]; ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if _, ok := m["name"]; !ok {
		return nil, false
	}
	return p, true
}

// deeperThan reports whether the JSON value data nests objects and arrays deeper than max.
func deeperThan(data []byte, max int) bool {
	depth := 0
	inString, escaped := false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > max {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// encodeResult encodes a call's result as the SDK's JSON-RPC layer does (HTML left
// unescaped, no trailing newline).
func encodeResult(res mcp.Result) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// fastResponse is the response to a fast-path call with the transport's id: the result,
// or the error as the SDK would send it (a nil result with no error is an internal
// error, as in the SDK).
func fastResponse(id jsonrpc.ID, res mcp.Result, err error) *jsonrpc.Response {
	if err != nil {
		return &jsonrpc.Response{ID: id, Error: err}
	}
	if res == nil {
		return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "JSON RPC internal error: the tool returned neither a result nor an error"}}
	}
	raw, merr := encodeResult(res)
	if merr != nil {
		return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("JSON RPC internal error: the result of tools/call could not be encoded: %v", merr)}}
	}
	return &jsonrpc.Response{ID: id, Result: raw}
}
