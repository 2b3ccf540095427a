package session

import (
	"context"
	"strings"
	"testing"
)

// A write into someone else's session (a human's `ptyhub write` into an agent's) reads
// its own output from where its input went in and leaves the owner's read position where
// it was: the agent's next call gets that output too, and is told that someone typed.
// Calls of the owner's own pool share its position as before.
func TestWriteIntoAnothersSession(t *testing.T) {
	t.Parallel()
	m, err := NewManager(Options{NoRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	ctx := context.Background()
	agent, err := m.NewClientFor("mcp", Caller{})
	if err != nil {
		t.Fatal(err)
	}
	human, err := m.NewPoolClient("cli", "cli", Caller{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := agent.Exec(ctx, ExecRequest{Argv: []string{"bash", "--norc", "--noprofile", "-i"},
		Env: map[string]string{"PS1": "$ "}, WaitFor: `\$ $`, YieldTimeMs: new(int64(30000))})
	if err != nil || r.ReturnedBecause != BecausePattern {
		t.Fatalf("bash: %v %+v", err, r)
	}
	id := r.SessionID
	hr, err := human.Write(ctx, WriteRequest{SessionID: id, Chars: "echo human-$((40+2))\n", WaitFor: "^human-42$", YieldTimeMs: new(int64(30000))})
	if err != nil || hr.ReturnedBecause != BecausePattern || !strings.Contains(hr.Output, "human-42") {
		t.Fatalf("the human's write: %v %+v", err, hr)
	}
	if hr.HumanInputBytes != 0 {
		t.Errorf("the human's own result reports %d bytes typed by others", hr.HumanInputBytes)
	}
	ar, err := agent.Write(ctx, WriteRequest{SessionID: id, WaitFor: `\$ $`, YieldTimeMs: new(int64(30000))})
	if err != nil || !strings.Contains(ar.Output, "human-42") {
		t.Fatalf("the agent's next poll lacks what the human's write printed: %v %+v", err, ar)
	}
	if want := int64(len("echo human-$((40+2))\n")); ar.HumanInputBytes != want {
		t.Errorf("the agent is told of %d bytes typed, want %d", ar.HumanInputBytes, want)
	}
	// Two calls of the agent's own pool share the position: the second sees only new output.
	a1, _ := agent.Write(ctx, WriteRequest{SessionID: id, Chars: "echo one\n", WaitFor: `^one$`, YieldTimeMs: new(int64(30000))})
	a2, _ := agent.Write(ctx, WriteRequest{SessionID: id, Chars: "echo two\n", WaitFor: `^two$`, YieldTimeMs: new(int64(30000))})
	if a1 == nil || a2 == nil || strings.Contains(a2.Output, "one\n") {
		t.Errorf("the agent's own calls: %+v then %+v", a1, a2)
	}
}
