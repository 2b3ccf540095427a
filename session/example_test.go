package session_test

import (
	"context"
	"fmt"

	"github.com/ptyhub/ptyhub/session"
)

// Start a program on a pseudo-terminal and collect what it prints; the call returns as
// soon as the program exits.
func Example() {
	m, err := session.NewManager(session.Options{})
	if err != nil {
		panic(err)
	}
	defer m.Close(context.Background())
	agent := m.NewClient("example")

	r, err := agent.Exec(context.Background(), session.ExecRequest{Cmd: "echo hello; exit 3"})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %s exit=%d %q\n", r.State, r.ReturnedBecause, *r.ExitCode, r.Output)
	// Output: exited exit exit=3 "hello\n"
}

// Keep a program running under a session id and type into it.
func ExampleClient_Write() {
	m, _ := session.NewManager(session.Options{})
	defer m.Close(context.Background())
	agent := m.NewClient("example")
	ctx := context.Background()

	r, _ := agent.Exec(ctx, session.ExecRequest{Cmd: "read name; echo hi $name; read more", YieldTimeMs: new(int64(0))})
	r, _ = agent.Write(ctx, session.WriteRequest{SessionID: r.SessionID, Chars: "ada\n", WaitFor: "hi ada"})
	fmt.Printf("%s %q\n", r.ReturnedBecause, r.Output)
	// Output: pattern "ada\nhi ada\n"
}
