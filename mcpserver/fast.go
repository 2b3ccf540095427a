package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

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
// Only the common case is taken: a call of a known tool once the session is initialized
// (by initialize or server/discover), with params holding nothing but "name" (a string),
// "arguments" (an object) and "_meta" (an object; when it carries the sessionless
// protocol's per-request triple, a supported version with a client info and
// capabilities that decode). Anything else — an unknown tool, odd params, a call before
// initialize, an unsupported version, every other method — goes to the SDK unchanged,
// so its answers (errors included) stay the SDK's own. As the SDK does, a result in a
// session of the 2026-07-28 protocol or later is marked "resultType":"complete", and one
// for a call that carried the triple names the server in its _meta.

// multiRoundTrip is the first protocol version whose results carry a resultType.
const multiRoundTrip = "2026-07-28"

// maxParamsDepth is the nesting the SDK's decoder refuses beyond; deeper params go to
// the SDK so that the refusal stays its own.
const maxParamsDepth = 1000

// fastCall returns how to serve a tools/call with these params, or ok false to leave the
// call to the SDK. It only decodes; the call runs when run is called (in its own
// goroutine, with a context the transport cancels on notifications/cancelled).
func (s *Server) fastCall(ss *mcp.ServerSession, params json.RawMessage) (run func(context.Context) (json.RawMessage, error), ok bool) {
	if ss == nil || s.sdkOnly {
		return nil, false
	}
	ip := ss.InitializeParams()
	if ip == nil {
		return nil, false
	}
	p, triple, ok := decodeCallParams(params)
	if !ok {
		return nil, false
	}
	// As the SDK's tools/call: "complete" for a session of the multi-round-trip
	// protocol (whatever the call's _meta says).
	complete := ip.ProtocolVersion >= multiRoundTrip
	h, ok := s.tools[p.Name]
	if !ok {
		return nil, false
	}
	req := &mcp.CallToolRequest{Session: ss, Params: p}
	return func(ctx context.Context) (json.RawMessage, error) {
		res, err := s.explainArgumentErrors(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
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
		if err != nil {
			return nil, err
		}
		if res == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "JSON RPC internal error: the tool returned neither a result nor an error"}
		}
		if triple {
			s.infoMeta.addTo(res)
		}
		raw, err := encodeResult(res, complete, &s.infoMeta)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("JSON RPC internal error: the result of tools/call could not be encoded: %v", err)}
		}
		return raw, nil
	}, true
}

// decodeCallParams decodes a tools/call's params when they hold only what the fast path
// serves (see above). triple reports a call of the sessionless protocol. The params of
// the common call are read by scanCallParams, without a map; any others as JSON.
func decodeCallParams(params json.RawMessage) (p *mcp.CallToolParamsRaw, triple, ok bool) {
	params = bytes.TrimSpace(params)
	if len(params) == 0 || params[0] != '{' || deeperThan(params, maxParamsDepth) {
		return nil, false, false
	}
	if p, triple, ok, sure := scanCallParams(params); sure {
		return p, triple, ok
	}
	return decodeCallParamsJSON(params)
}

// decodeCallParamsJSON is decodeCallParams for any params, decoded as JSON. Params with
// a key twice (as decoded, escapes and all) are left to the SDK: its decoding merges
// two "_meta" objects into one map, where the last one alone would count here.
func decodeCallParamsJSON(params json.RawMessage) (p *mcp.CallToolParamsRaw, triple, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return nil, false, false
	}
	n := 0
	if !members(params, func(_, _ []byte) bool { n++; return true }) || n != len(m) {
		return nil, false, false
	}
	p = &mcp.CallToolParamsRaw{}
	for k, v := range m {
		switch k {
		case "name":
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &p.Name) != nil {
				return nil, false, false
			}
		case "arguments":
			if len(v) == 0 || v[0] != '{' {
				return nil, false, false
			}
			p.Arguments = v
		case "_meta":
			if len(v) == 0 || v[0] != '{' {
				return nil, false, false
			}
			if p.Meta, triple, ok = decodeMeta(v); !ok {
				return nil, false, false
			}
		default:
			return nil, false, false
		}
	}
	if _, ok := m["name"]; !ok {
		return nil, false, false
	}
	return p, triple, true
}

// scanCallParams is decodeCallParams for params (a JSON object) whose keys are written
// without escapes, each once, and whose name, if a string, is printable ASCII without
// escapes: it finds the members without decoding them (members). sure false: params of
// another kind, which decodeCallParams decodes as JSON (a key or name with escapes) or
// leaves to the SDK (a key twice).
func scanCallParams(params []byte) (p *mcp.CallToolParamsRaw, triple, ok, sure bool) {
	var name, args, meta []byte
	unknown := false
	if !members(params, func(k, v []byte) bool {
		var field *[]byte
		switch string(k) {
		case "name":
			field = &name
		case "arguments":
			field = &args
		case "_meta":
			field = &meta
		default:
			if bytes.IndexByte(k, '\\') >= 0 {
				return false
			}
			unknown = true
			return true
		}
		if *field != nil {
			return false // twice
		}
		*field = v
		return true
	}) {
		return nil, false, false, false
	}
	if unknown || name == nil {
		return nil, false, false, true
	}
	if name[0] != '"' || args != nil && args[0] != '{' || meta != nil && meta[0] != '{' {
		return nil, false, false, true
	}
	if !plainString(name) || !printableASCII(name) {
		return nil, false, false, false
	}
	p = &mcp.CallToolParamsRaw{Name: string(name[1 : len(name)-1])}
	if args != nil {
		// A copy: the call outlives the buffer params may be read from.
		p.Arguments = bytes.Clone(args)
	}
	if meta != nil {
		if p.Meta, triple, ok = decodeMeta(meta); !ok {
			return nil, false, false, true
		}
	}
	return p, triple, true, true
}

func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// metaMemo is a call's _meta as decodeMeta decoded it: its bytes, the map, and whether
// it carries the sessionless protocol's triple.
type metaMemo struct {
	raw    string
	meta   mcp.Meta
	triple bool
}

// lastMeta is the last _meta decodeMeta accepted that holds no progress token. A client
// sends the same one with every call (the Go SDK's: its protocol version, info and
// capabilities), and what decodeMeta makes of it depends on its bytes alone, so a call
// whose _meta has the same bytes gets the same map, decoded and checked once. Its map
// is shared by those calls: no one writes it (a tool reads its progress token only).
var lastMeta atomic.Pointer[metaMemo]

// decodeMeta decodes a call's _meta (a JSON object) for the fast path: ok false when it
// does not decode, or carries a triple the fast path does not serve (validTriple).
func decodeMeta(raw []byte) (meta mcp.Meta, triple, ok bool) {
	if last := lastMeta.Load(); last != nil && last.raw == string(raw) {
		return last.meta, last.triple, true
	}
	if json.Unmarshal(raw, &meta) != nil {
		return nil, false, false
	}
	if _, ok := meta[mcp.MetaKeyProtocolVersion]; ok {
		if !validTriple(raw, meta) {
			return nil, false, false
		}
		triple = true
	}
	if _, ok := meta[progressTokenKey]; !ok {
		// A progress token changes at each call: such a _meta is not kept.
		lastMeta.Store(&metaMemo{raw: string(raw), meta: meta, triple: triple})
	}
	return meta, triple, true
}

// progressTokenKey is the _meta key of a call's progress token.
const progressTokenKey = "progressToken"

// validTriple reports whether a call's _meta (raw, and decoded as meta) carries a
// sessionless protocol triple the SDK accepts as it is: a version of that protocol the
// server supports (the SDK's, as New does not restrict them), client capabilities
// that decode, and a client info that decodes if present.
// Anything else (an older version in _meta, which the SDK ignores, included) is left to
// the SDK.
func validTriple(raw json.RawMessage, meta map[string]any) bool {
	v, ok := meta[mcp.MetaKeyProtocolVersion].(string)
	if !ok || v < multiRoundTrip || !slices.Contains(mcp.SupportedProtocolVersions(), v) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	if info, ok := m[mcp.MetaKeyClientInfo]; ok {
		var impl mcp.Implementation
		if len(info) == 0 || info[0] != '{' || json.Unmarshal(info, &impl) != nil {
			return false
		}
	}
	caps := m[mcp.MetaKeyClientCapabilities]
	var c struct {
		mcp.ClientCapabilities
		// The SDK's client capabilities of this protocol: roots as an object of its own
		// (mcp.RootCapabilities, spelled out as that type is deprecated).
		Roots *struct {
			ListChanged bool `json:"listChanged,omitempty"`
		} `json:"roots,omitempty"`
	}
	return len(caps) > 0 && caps[0] == '{' && json.Unmarshal(caps, &c) == nil
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
// unescaped, no trailing newline), with "resultType":"complete" last when complete (the
// SDK sets that unexported field of CallToolResult, which encodes it last). The result
// is compact JSON. known, when not nil, is a _meta encoded ahead.
func encodeResult(res mcp.Result, complete bool, known *knownMeta) (json.RawMessage, error) {
	if ctr, ok := res.(*mcp.CallToolResult); ok {
		if data, ok := encodeToolResult(ctr, complete, known); ok {
			return data, nil
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, err
	}
	data := bytes.TrimRight(buf.Bytes(), "\n")
	if !complete {
		return data, nil
	}
	if len(data) < 2 || data[len(data)-1] != '}' {
		return nil, fmt.Errorf("the result is not a JSON object")
	}
	out := make([]byte, 0, len(data)+24)
	out = append(out, data[:len(data)-1]...)
	if len(data) > 2 {
		out = append(out, ',')
	}
	return append(out, `"resultType":"complete"}`...), nil
}

// encodeToolResult encodes, in one buffer of about its size, the result every tool
// returns (addTool): its _meta (the server's info for a call of the sessionless
// protocol) or none, one text content, the structured content as JSON of its own
// (json.Marshal's, as addTool makes it: compact with HTML escaped, as the SDK's
// encoding of the result would leave it) or none, isError, nothing else. The bytes
// are the SDK's: its CallToolResult.MarshalJSON writes the fields in this order, and
// every string with HTML escaped (json.Marshal). ok false: a result of another shape,
// for encodeResult's general path.
func encodeToolResult(res *mcp.CallToolResult, complete bool, known *knownMeta) (data json.RawMessage, ok bool) {
	if len(res.Content) != 1 || res.InputRequests != nil || res.RequestState != "" {
		return nil, false
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || tc.Meta != nil || tc.Annotations != nil {
		return nil, false
	}
	var sc json.RawMessage
	switch v := res.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, false // the SDK's encoding fails; so does encodeResult's
		}
		sc = v
	default:
		return nil, false
	}
	metaLen := 128 * len(res.Meta)
	if known != nil && known.is(res.Meta) {
		metaLen = len(known.data)
	}
	buf := bytes.NewBuffer(make([]byte, 0, len(tc.Text)+len(tc.Text)/8+len(sc)+metaLen+96))
	enc := json.NewEncoder(buf) // escapes HTML, as json.Marshal does
	buf.WriteByte('{')
	switch {
	case len(res.Meta) == 0: // omitempty
	case known != nil && known.is(res.Meta):
		buf.WriteString(`"_meta":`)
		buf.Write(known.data)
		buf.WriteByte(',')
	default:
		buf.WriteString(`"_meta":`)
		if err := enc.Encode(res.Meta); err != nil {
			return nil, false
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		buf.WriteByte(',')
	}
	buf.WriteString(`"content":[{"type":"text","text":`)
	if err := enc.Encode(tc.Text); err != nil {
		return nil, false
	}
	buf.Truncate(buf.Len() - 1)
	buf.WriteString(`}]`)
	if sc != nil {
		buf.WriteString(`,"structuredContent":`)
		buf.Write(sc)
	}
	if res.IsError {
		buf.WriteString(`,"isError":true`)
	}
	if complete {
		buf.WriteString(`,"resultType":"complete"`)
	}
	buf.WriteByte('}')
	return buf.Bytes(), true
}

// knownMeta is the _meta of the sessionless protocol's results (the server's info,
// which fastCall adds to each), encoded once.
type knownMeta struct {
	info *mcp.Implementation
	meta mcp.Meta // {MetaKeyServerInfo: info}, shared by the results it is set on; never written
	data []byte   // json.Marshal of meta
}

func newKnownMeta(info *mcp.Implementation) knownMeta {
	meta := mcp.Meta{mcp.MetaKeyServerInfo: info}
	data, err := json.Marshal(meta)
	if err != nil {
		return knownMeta{}
	}
	return knownMeta{info: info, meta: meta, data: data}
}

// addTo adds the server's info to the _meta of res, as the SDK does for a call of the
// sessionless protocol: a result without _meta gets k's own map (no map made per
// result); one with a _meta gets the key added unless it has it.
func (k *knownMeta) addTo(res mcp.Result) {
	m := res.GetMeta()
	switch {
	case m == nil && k.meta != nil:
		res.SetMeta(k.meta)
	case m == nil:
		res.SetMeta(map[string]any{mcp.MetaKeyServerInfo: k.info})
	default:
		if _, ok := m[mcp.MetaKeyServerInfo]; !ok {
			m[mcp.MetaKeyServerInfo] = k.info
		}
	}
}

// is reports whether m is the _meta k encodes: the server's info alone, this one.
func (k *knownMeta) is(m mcp.Meta) bool {
	if k.info == nil || len(m) != 1 {
		return false
	}
	v, ok := m[mcp.MetaKeyServerInfo].(*mcp.Implementation)
	return ok && v == k.info
}
