package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool registers a tool whose arguments decode into In and whose result is Out, as
// the SDK's generic mcp.AddTool does — the input schema derived from In (inputSchema),
// the arguments validated against it before the call, the result as structuredContent
// with the output schema derived from Out — but decoding with encoding/json: the SDK's
// generic path decodes each call's JSON five times more, each decoder allocating a
// 32 KiB buffer (about 250 KB of garbage a call, half the MCP layer's cost). The common
// call's arguments are checked on their bytes by the schema's plan (argPlan) and decoded
// once, without the map the schema's validator walks (decodeArguments). The output
// is not validated against its schema at run time; TestToolOutputsMatchSchemas checks
// the result types against it instead.
func addTool[In any, Out texter](s *Server, t *mcp.Tool, call func(context.Context, In) (Out, error)) {
	in := inputSchema[In]()
	if hasDefault(in) {
		// The SDK applies schema defaults to the arguments; this path does not.
		panic(fmt.Sprintf("tool %s: its input schema has defaults, which addTool does not apply", t.Name))
	}
	resolved, err := in.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", t.Name, err))
	}
	rt := reflect.TypeFor[Out]()
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	out, err := jsonschema.ForType(rt, &jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("tool %s: output schema: %v", t.Name, err))
	}
	t.InputSchema, t.OutputSchema = in, out
	plan := newArgPlan(in, reflect.TypeFor[In]())
	typed := handler(s, call)
	h := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := decodeArguments[In](plan, resolved, req.Params.Arguments)
		if err != nil {
			return errorResult(err), nil
		}
		res, o, err := typed(ctx, req, args)
		if err != nil {
			return errorResult(err), nil
		}
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
		return res, nil
	}
	s.mcp.AddTool(t, h)
	s.tools[t.Name] = h
}

func errorResult(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}

// decodeArguments validates raw against the input schema and decodes it into an In.
// Arguments the plan accepts (argPlan: the common call) are decoded at once; any others
// take the schema's path (decodeBySchema), whose errors are the only ones.
func decodeArguments[In any](plan *argPlan, resolved *jsonschema.Resolved, raw json.RawMessage) (In, error) {
	if plan.accepts(raw) {
		var in In
		if json.Unmarshal(raw, &in) == nil {
			return in, nil
		}
	}
	return decodeBySchema[In](resolved, raw)
}

// decodeBySchema validates raw against the input schema (as a map[string]any, as the SDK
// does) and decodes it into an In. Its errors read as the SDK's ("validating
// \"arguments\": …", "unmarshaling arguments: …", "json: …"), which
// explainArgumentErrors turns into a sentence for the model.
func decodeBySchema[In any](resolved *jsonschema.Resolved, raw json.RawMessage) (In, error) {
	var in In
	m := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return in, fmt.Errorf("unmarshaling arguments: %w", err)
		}
		if m == nil { // "null": no arguments
			m = map[string]any{}
		}
	}
	var v any = m
	if err := resolved.Validate(&v); err != nil {
		return in, fmt.Errorf("validating \"arguments\": %v", err)
	}
	if len(raw) > 0 && string(raw) != "null" {
		// Validated: every property is known (additionalProperties is false) and typed,
		// so encoding/json's case-insensitive field matching never comes into play.
		if err := json.Unmarshal(raw, &in); err != nil {
			return in, err
		}
	}
	return in, nil
}

// hasDefault reports whether s or a schema inside it sets a default.
func hasDefault(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	if s.Default != nil {
		return true
	}
	for _, p := range s.Properties {
		if hasDefault(p) {
			return true
		}
	}
	return hasDefault(s.Items) || hasDefault(s.AdditionalProperties)
}
