package main

import (
	"context"
	"fmt"
	"io"
)

const webHelp = `Usage:
  ptyhub web [--listen 127.0.0.1:PORT] [--socket PATH]

Starts the browser view of your sessions in the per-user server (starting the server if
needed) and prints its URL. The page lists every session of every agent and host, live;
opening one shows its terminal, read-only until you press "Take over" (ctrl-] or
"Release" gives it back); ended sessions replay from their transcripts; sessions an agent
asked a person for (ask_human) and password prompts are marked.

The server listens on 127.0.0.1 (--listen picks the address and port; loopback only) and
prints a URL with a random token, also kept in web.token (mode 0600) beside the socket.
Every request needs the token (a cookie after the first visit), the Host must be the
loopback address it listens on, and a WebSocket's Origin must be the page's own. The view
runs until the server exits; running the command again prints the same URL.
`

func runWeb(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("web", webHelp)
	listen := fs.String("listen", "", "`address` to listen on, host:port on loopback (default 127.0.0.1 on a free port)")
	t := serverFlags(fs)
	if _, code, done := fs.parseArgs(args, 0, "takes no arguments", stdout, stderr); done {
		return code
	}
	if h := t.hostSpec(ctx); h != "" {
		return usageError(stderr, "web", fmt.Sprintf("the web view shows this machine's server only; drop --host (or PTYHUB_HOST=%s) and run ptyhub web on that machine", h))
	}
	c, err := dial(ctx, t, "web", false, nil)
	if err != nil {
		return fail(stderr, "web", err)
	}
	defer c.Close(ctx, true)
	url, err := c.Web(ctx, *listen)
	if err != nil {
		return fail(stderr, "web", err)
	}
	fmt.Fprintln(stdout, url)
	return 0
}
