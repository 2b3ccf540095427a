package mcpserver

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/session"
)

// fill sets every field reachable from v (a pointer) to a non-zero value: one element in
// every slice and map, every pointer allocated, so a marshalled value shows every
// property the type can have.
func fill(v reflect.Value, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("x"))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	}
}

func filled[T any]() *T {
	p := new(T)
	fill(reflect.ValueOf(&p).Elem(), 0)
	return p
}

// The tools' results are not checked against their output schemas at run time
// (addTool): every result type, with every field set and with none, validates here, as
// it arrives at a client (structuredContent of a real call).
func TestToolOutputsMatchSchemas(t *testing.T) {
	t.Parallel()
	full := []bool{true, false}
	for _, all := range full {
		pick := func(f func() any, zero any) any {
			if all {
				return f()
			}
			return zero
		}
		res := pick(func() any { return filled[session.Result]() }, &session.Result{}).(*session.Result)
		f := &fakeService{
			exec:  func(context.Context, session.ExecRequest) (*session.Result, error) { return res, nil },
			write: func(context.Context, session.WriteRequest) (*session.Result, error) { return res, nil },
			read:  func(context.Context, session.ReadRequest) (*session.Result, error) { return res, nil },
			list: func(context.Context) (*session.ListResult, error) {
				return pick(func() any { return filled[session.ListResult]() }, &session.ListResult{}).(*session.ListResult), nil
			},
			kill: func(context.Context, session.KillRequest) (*session.KillResult, error) {
				return pick(func() any { return filled[session.KillResult]() }, &session.KillResult{}).(*session.KillResult), nil
			},
			resize: func(context.Context, session.ResizeRequest) (*session.ResizeResult, error) {
				return pick(func() any { return filled[session.ResizeResult]() }, &session.ResizeResult{}).(*session.ResizeResult), nil
			},
			wait: func(context.Context, session.WaitRequest) (*session.WaitResult, error) {
				return pick(func() any { return filled[session.WaitResult]() }, &session.WaitResult{}).(*session.WaitResult), nil
			},
			ask: func(context.Context, session.AskRequest) (*session.AskResult, error) {
				return pick(func() any { return filled[session.AskResult]() }, &session.AskResult{}).(*session.AskResult), nil
			},
		}
		cs := connect(t, f, Options{})
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		args := map[string]map[string]any{
			"exec_command":   {"cmd": "true"},
			"write_stdin":    {"session_id": "1"},
			"read_output":    {"session_id": "1"},
			"list_sessions":  {},
			"kill_session":   {"session_id": "1"},
			"resize_session": {"session_id": "1", "rows": 24, "cols": 80},
			"wait_sessions":  {},
			"ask_human":      {"session_id": "1"},
		}
		for _, tool := range tools.Tools {
			a, ok := args[tool.Name]
			if !ok {
				t.Errorf("no arguments for tool %s in this test", tool.Name)
				continue
			}
			r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool.Name, Arguments: a})
			if err != nil || r.IsError {
				t.Fatalf("%s: %v %v", tool.Name, err, r)
			}
			b, _ := json.Marshal(tool.OutputSchema)
			var schema jsonschema.Schema
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatal(err)
			}
			resolved, err := schema.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			sc, _ := json.Marshal(r.StructuredContent)
			var v any
			json.Unmarshal(sc, &v)
			if err := resolved.Validate(&v); err != nil {
				t.Errorf("%s (all fields set: %v): structuredContent does not match the output schema: %v\n%s", tool.Name, all, err, sc)
			}
		}
	}
}
