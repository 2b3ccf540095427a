package mcpserver

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ptyhub/ptyhub/session"
)

// BenchmarkDecodeArguments: the arguments of the two calls of an exec (exec_command, then
// kill_session of its session), validated against their schemas and decoded, as every
// call's arguments are.
func BenchmarkDecodeArguments(b *testing.B) {
	exec, execPlan := resolvedFor[session.ExecRequest](b)
	kill, killPlan := resolvedFor[session.KillRequest](b)
	execArgs := json.RawMessage(`{"argv":["/bin/true"],"yield_time_ms":30000}`)
	killArgs := json.RawMessage(`{"session_id":"0196a7c4-0b5e-7f3a-9c1d-2e4f6a8b0c1d","remove":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeArguments[session.ExecRequest](execPlan, exec, execArgs); err != nil {
			b.Fatal(err)
		}
		if _, err := decodeArguments[session.KillRequest](killPlan, kill, killArgs); err != nil {
			b.Fatal(err)
		}
	}
}

// resolvedFor returns T's input schema, resolved, and its plan, as addTool makes them.
func resolvedFor[T any](tb testing.TB) (*jsonschema.Resolved, *argPlan) {
	tb.Helper()
	s := inputSchema[T]()
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		tb.Fatal(err)
	}
	return r, newArgPlan(s, reflect.TypeFor[T]())
}

// goClientMeta is the _meta of every call of the Go SDK's client (v1.8.0) as it writes
// it: the sessionless protocol's triple.
const goClientMeta = `{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"ptyhub-bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`

// BenchmarkDecodeCallParams: the params of a call as the Go SDK's client sends them,
// decoded for the fast path.
func BenchmarkDecodeCallParams(b *testing.B) {
	params := json.RawMessage(`{"_meta":` + goClientMeta + `,"name":"kill_session","arguments":{"session_id":"0196a7c4-0b5e-7f3a-9c1d-2e4f6a8b0c1d","remove":true}}`)
	if _, tr, ok := decodeCallParams(params); !ok || !tr {
		b.Fatalf("not a call of the fast path")
	}
	b.ReportAllocs()
	for b.Loop() {
		decodeCallParams(params)
	}
}
