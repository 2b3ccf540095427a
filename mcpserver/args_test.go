package mcpserver

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// argTool is one tool's input as addTool handles it: the plan, the decoding of a call
// (decodeArguments), and the schema's path alone (decodeBySchema), the reference.
type argTool struct {
	name     string
	plan     *argPlan
	decode   func(raw json.RawMessage) (any, error)
	bySchema func(raw json.RawMessage) (any, error)
}

func argToolFor[In any](tb testing.TB, name string) argTool {
	resolved, plan := resolvedFor[In](tb)
	return argTool{name: name, plan: plan,
		decode: func(raw json.RawMessage) (any, error) {
			return decodeArguments[In](plan, resolved, raw)
		},
		bySchema: func(raw json.RawMessage) (any, error) {
			return decodeBySchema[In](resolved, raw)
		},
	}
}

// argTools lists every tool's input type (TestArgPlans checks the list is whole).
func argTools(tb testing.TB) []argTool {
	return []argTool{
		argToolFor[session.ExecRequest](tb, "exec_command"),
		argToolFor[session.WriteRequest](tb, "write_stdin"),
		argToolFor[session.ReadRequest](tb, "read_output"),
		argToolFor[listInput](tb, "list_sessions"),
		argToolFor[session.KillRequest](tb, "kill_session"),
		argToolFor[session.ResizeRequest](tb, "resize_session"),
		argToolFor[session.WaitRequest](tb, "wait_sessions"),
		argToolFor[session.AskRequest](tb, "ask_human"),
	}
}

// Every tool has a plan: the arguments of every tool's common call are checked without
// the schema's map.
func TestArgPlans(t *testing.T) {
	t.Parallel()
	tools := argTools(t)
	srv := New(&fakeService{}, Options{})
	if len(tools) != len(srv.tools) {
		t.Errorf("%d tools here, %d registered", len(tools), len(srv.tools))
	}
	for _, tt := range tools {
		if _, ok := srv.tools[tt.name]; !ok {
			t.Errorf("%s is not a tool", tt.name)
		}
		if tt.plan == nil {
			t.Errorf("%s: no plan: its input schema has a shape the plan does not check", tt.name)
		}
	}
}

type argVerdict int

const (
	fast argVerdict = iota // the plan accepts them
	slow                   // the plan leaves them to the schema's path, which accepts them
	bad                    // the schema's path refuses them (so the plan must leave them)
)

// argCases are arguments of every kind, good and bad, by tool, with their verdict.
var argCases = []struct {
	tool, args string
	verdict    argVerdict
}{
	// The common calls.
	{"exec_command", `{"argv":["/bin/true"],"yield_time_ms":30000}`, fast},
	{"exec_command", `{"argv":["/bin/true"]}`, fast},
	{"exec_command", `{"cmd":"ls -l | head","workdir":"/tmp","env":{"A":"1","B":"x\u00e9"},"tty":false,"rows":40,"cols":120,"wait_for":">>> $","timeout_ms":0,"login":true,"clear_env":false,"stdin":"x\n","close_stdin":true,"max_output_tokens":100,"profile":"plain","name":"build","shell_integration":false,"host":"ssh://me@box","shell":"/bin/zsh"}`, fast},
	{"exec_command", ` { "argv" : [ "a" , "b" ] , "env" : { } } `, fast},
	{"exec_command", `{"argv":[]}`, fast},
	{"exec_command", `{}`, fast},
	{"exec_command", `{"cmd":"\u0000\u001b[A\\\"\ud83d\ude00"}`, fast},
	{"exec_command", `{"cmd":"ls","rows":-1,"yield_time_ms":-5}`, fast}, // the service's ranges, not the schema's
	{"exec_command", `{"cmd":"ls","yield_time_ms":9223372036854775807}`, fast},
	{"exec_command", `{"cmd":"ls","yield_time_ms":-9223372036854775808}`, fast},
	{"exec_command", `{"cmd":"ls","yield_time_ms":-0}`, fast},
	{"write_stdin", `{"session_id":"1","chars":"1+1\n","wait_for":">>> $","yield_time_ms":30000}`, fast},
	{"write_stdin", `{"session_id":"0196a7c4-0b5e","keys":["C-c","Enter"],"close_stdin":true}`, fast},
	{"read_output", `{"session_id":"1","view":"screen","from":0,"to":100,"tail_lines":5,"max_output_tokens":10}`, fast},
	{"list_sessions", `{}`, fast},
	{"kill_session", `{"session_id":"0196a7c4-0b5e-7f3a-9c1d-2e4f6a8b0c1d","remove":true}`, fast},
	{"kill_session", `{"session_id":"1","signal":"INT"}`, fast},
	{"resize_session", `{"session_id":"1","rows":24,"cols":80}`, fast},
	{"wait_sessions", `{"session_ids":["1","build"],"until":["exit"],"timeout_ms":0}`, fast},
	{"wait_sessions", `{}`, fast},
	{"ask_human", `{"session_id":"1","message":"type the password","timeout_ms":1000}`, fast},

	// Unknown arguments.
	{"exec_command", `{"cmd":"ls","yield_ms":5}`, bad},
	{"exec_command", `{"CMD":"ls"}`, bad},
	{"exec_command", `{"Cmd":"ls"}`, bad},
	{"exec_command", `{"cmd ":"ls"}`, bad},
	{"list_sessions", `{"all":true}`, bad},
	{"kill_session", `{"session_id":"1","sig":"INT"}`, bad},
	// Wrong types.
	{"exec_command", `{"cmd":5}`, bad},
	{"exec_command", `{"cmd":true}`, bad},
	{"exec_command", `{"cmd":["ls"]}`, bad},
	{"exec_command", `{"cmd":{"a":"b"}}`, bad},
	{"exec_command", `{"argv":"ls -l"}`, bad},
	{"exec_command", `{"argv":["ls",5]}`, bad},
	{"exec_command", `{"argv":["ls",null]}`, bad},
	{"exec_command", `{"argv":[["ls"]]}`, bad},
	{"exec_command", `{"argv":{"0":"ls"}}`, bad},
	{"exec_command", `{"env":{"A":1}}`, bad},
	{"exec_command", `{"env":{"A":null}}`, bad},
	{"exec_command", `{"env":{"A":{"B":"c"}}}`, bad},
	{"exec_command", `{"env":["A=1"]}`, bad},
	{"exec_command", `{"env":"A=1"}`, bad},
	{"exec_command", `{"tty":"false"}`, bad},
	{"exec_command", `{"tty":0}`, bad},
	{"exec_command", `{"rows":"24"}`, bad},
	{"exec_command", `{"rows":true}`, bad},
	{"write_stdin", `{"session_id":true}`, bad},
	{"write_stdin", `{"session_id":7,"chars":"x"}`, bad},
	{"write_stdin", `{"session_id":"1","chars":5}`, bad},
	{"write_stdin", `{"session_id":"1","keys":"C-c"}`, bad},
	// Numbers the input's integers cannot hold, or not written as integers.
	{"exec_command", `{"cmd":"ls","yield_time_ms":1.5}`, bad},
	{"exec_command", `{"cmd":"ls","yield_time_ms":1.0}`, bad},
	{"exec_command", `{"cmd":"ls","yield_time_ms":1e3}`, bad},
	{"exec_command", `{"cmd":"ls","yield_time_ms":1E3}`, bad},
	{"exec_command", `{"cmd":"ls","yield_time_ms":9223372036854775808}`, bad},
	{"exec_command", `{"cmd":"ls","yield_time_ms":9300000000000000000}`, bad},
	{"exec_command", `{"cmd":"ls","yield_time_ms":-9223372036854775809}`, bad},
	{"exec_command", `{"cmd":"ls","yield_time_ms":18446744073709551616}`, bad},
	{"exec_command", `{"cmd":"ls","yield_time_ms":100000000000000000000000}`, bad},
	{"exec_command", `{"cmd":"ls","rows":1e400}`, bad},
	{"resize_session", `{"session_id":"1","rows":24.5,"cols":80}`, bad},
	{"resize_session", `{"session_id":"1","rows":-24e0,"cols":80}`, bad},
	// Missing required arguments.
	{"write_stdin", `{"chars":"x"}`, bad},
	{"write_stdin", `{}`, bad},
	{"resize_session", `{"session_id":"1","rows":10}`, bad},
	{"resize_session", `{"rows":10,"cols":10}`, bad},
	{"kill_session", `{"remove":true}`, bad},
	{"ask_human", `{"message":"x"}`, bad},
	// Null: a top-level null is taken as absent before this (normalizeArguments); here
	// it is the schema's to judge.
	{"exec_command", `{"cmd":null}`, bad},
	{"write_stdin", `{"session_id":null}`, bad},
	// Not an object, or no arguments.
	{"exec_command", ``, slow},
	{"exec_command", `null`, slow},
	{"list_sessions", `null`, slow},
	{"list_sessions", ``, slow},
	{"exec_command", `[]`, bad},
	{"exec_command", `"ls"`, bad},
	{"exec_command", `5`, bad},
	// Keys twice: the schema sees the last value, the struct's decoding both.
	{"write_stdin", `{"session_id":"1","chars":"a","chars":"b"}`, slow},
	{"exec_command", `{"rows":"x","rows":5}`, bad},
	{"exec_command", `{"rows":5,"rows":"x"}`, bad},
	// Keys written with escapes: the same key to both decoders.
	{"exec_command", `{"c\u006dd":"ls"}`, slow},
	{"write_stdin", `{"session_\u0069d":"1"}`, slow},
	{"exec_command", `{"env":{"\u0041":"1"}}`, fast}, // a map's key: any string
	// Keys that are not valid UTF-8 (json.Valid accepts them).
	{"exec_command", "{\"cmd\xff\":\"ls\"}", bad},
	{"exec_command", "{\"cmd\":\"l\xffs\"}", fast},
}

// The plan accepts only arguments the schema accepts, and a call decodes to the same
// input, or fails with the same error, as the schema's path alone would give it: on a
// table of good and bad arguments of every kind (unknown, wrong types, integers out of
// range or not written as integers, missing, null, keys twice). The plan takes the
// common calls (else the schema's path would run for them) and leaves every bad one to
// the schema, whose error the call gets.
func TestArgPlanAgreesWithSchema(t *testing.T) {
	t.Parallel()
	tools := map[string]argTool{}
	for _, tt := range argTools(t) {
		tools[tt.name] = tt
	}
	for _, c := range argCases {
		tt := tools[c.tool]
		raw := json.RawMessage(c.args)
		if c.args != "" && !json.Valid(raw) {
			t.Fatalf("%s %s: not JSON", c.tool, c.args)
		}
		_, err := tt.bySchema(raw)
		accepts := tt.plan.accepts(raw)
		switch {
		case c.verdict == fast && (!accepts || err != nil):
			t.Errorf("%s %s: the plan accepts: %v, the schema's path: %v; want both to accept", c.tool, c.args, accepts, err)
		case c.verdict == slow && (accepts || err != nil):
			t.Errorf("%s %s: the plan accepts: %v, the schema's path: %v; want only the schema's path to accept", c.tool, c.args, accepts, err)
		case c.verdict == bad && (accepts || err == nil):
			t.Errorf("%s %s: the plan accepts: %v, the schema's path: %v; want both to refuse", c.tool, c.args, accepts, err)
		}
		sameDecoding(t, tt, raw)
	}
}

// sameDecoding fails t when decodeArguments decodes raw otherwise than the schema's path.
func sameDecoding(t *testing.T, tt argTool, raw json.RawMessage) {
	t.Helper()
	want, wantErr := tt.bySchema(raw)
	got, err := tt.decode(raw)
	if (err == nil) != (wantErr == nil) || err != nil && !sameLetters(err.Error(), wantErr.Error()) {
		t.Errorf("%s %q: error %v, the schema's path %v", tt.name, raw, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s %q: decoded %#v, the schema's path %#v", tt.name, raw, got, want)
	}
	if tt.plan.accepts(raw) && wantErr != nil {
		t.Errorf("%s %q: the plan takes what the schema refuses: %v", tt.name, raw, wantErr)
	}
}

// sameLetters reports whether a and b hold the same bytes, in any order: the schema
// lists unknown properties in the order of a map's iteration, which changes from one
// validation to the next.
func sameLetters(a, b string) bool {
	x, y := []byte(a), []byte(b)
	slices.Sort(x)
	slices.Sort(y)
	return string(x) == string(y)
}

// FuzzArgPlan: for any JSON a tool call's arguments can hold, decodeArguments gives the
// input or the error the schema's path gives, and the plan accepts nothing the schema
// refuses.
func FuzzArgPlan(f *testing.F) {
	tools := argTools(f)
	index := map[string]int{}
	for i, tt := range tools {
		index[tt.name] = i
	}
	for _, c := range argCases {
		f.Add(uint8(index[c.tool]), []byte(c.args))
	}
	f.Fuzz(func(t *testing.T, tool uint8, args []byte) {
		if len(args) > 0 && !json.Valid(args) {
			return // the transport answers such a line itself
		}
		sameDecoding(t, tools[int(tool)%len(tools)], args)
	})
}

// A common call's arguments are decoded once, without the schema's map: a few
// allocations (the input's strings and slices), not the hundred of the schema's path.
func TestArgumentsDecodedOnce(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's own allocations")
	}
	exec := argToolFor[session.ExecRequest](t, "exec_command")
	raw := json.RawMessage(`{"argv":["/bin/true"],"yield_time_ms":30000}`)
	fast := testing.AllocsPerRun(50, func() { exec.decode(raw) })
	slow := testing.AllocsPerRun(50, func() { exec.bySchema(raw) })
	if fast > 15 || fast > slow/3 {
		t.Errorf("exec_command's arguments: %.0f allocations, %.0f by the schema's path", fast, slow)
	}
}
