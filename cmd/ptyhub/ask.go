package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ptyhub/ptyhub/internal/desktop"
	"github.com/ptyhub/ptyhub/session"
)

const askHelp = `Usage:
  ptyhub ask-human ID [--message TEXT] [--timeout 10m] [--json]

Asks a person to take over session ID: for a password, a question a program must not
answer for itself, anything only a person should type. The session is marked as needing
a person ('ptyhub ls' shows running(person), 'ptyhub web' shows your message), attached
terminals ring, and a desktop notification goes out where the machine has one. The
command prints where the person can take it ('ptyhub attach ID' or the web page) on
stderr, waits until they are done — the program read their input and moved on, or they
detached or released the session, or it exited — or until --timeout, then prints the
program's new output. What the person typed at a password prompt is never printed.
`

func runAskHuman(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("ask-human", askHelp)
	message := fs.String("message", "", "what the person should do")
	timeout := fs.Duration("timeout", session.DefaultAskTimeoutMs*time.Millisecond, "give up after this `duration`")
	jsonOut := fs.Bool("json", false, "print the result as one JSON object")
	t := serverFlags(fs)
	pos, code, done := fs.parseArgs(args, 1, "give one session ID", stdout, stderr)
	if done {
		return code
	}
	if *timeout < 0 {
		return usageError(stderr, "ask-human", "--timeout must not be negative")
	}
	id := pos[0]
	c, err := dial(ctx, t, "cli", false, nil)
	if err != nil {
		return fail(stderr, "ask-human", err)
	}
	defer c.Close(ctx, true)
	where := "'ptyhub attach " + id + "'"
	if t.hostSpec(ctx) == "" {
		if u, err := c.Web(ctx, ""); err == nil {
			where += " or " + u + "#session=" + id
		}
	}
	fmt.Fprintf(stderr, "ptyhub: waiting for a person at session %s: %s\n", id, where)
	msg := *message
	if msg == "" {
		msg = "a program needs you"
	}
	// The notifier: owned by this command, bounded by its own timeout.
	go desktop.Notify(context.WithoutCancel(ctx), "ptyhub: session "+id+" needs you", msg)
	ms := timeout.Milliseconds()
	res, err := c.AskHuman(ctx, session.AskRequest{SessionID: id, Message: *message, TimeoutMs: &ms})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return exitError
		}
		return fail(stderr, "ask-human", err)
	}
	if *jsonOut {
		printJSON(stdout, res)
	} else {
		fmt.Fprintf(stderr, "ptyhub: the person is done (%s)\n", res.Person)
		printText(stdout, res.Result.TextIn(cliWords))
	}
	if res.Person == session.PersonTimeout {
		return exitError
	}
	return 0
}
