package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ptyhub/ptyhub/mcpserver"
	"github.com/ptyhub/ptyhub/session"
)

const mcpHelp = `Usage:
  ptyhub mcp [--embedded] [--keep] [--verbose]

Serves ptyhub's MCP tools (exec_command, write_stdin, read_output, list_sessions,
kill_session, resize_session) on stdin and stdout, for a coding agent that starts it:

  claude mcp add ptyhub -- ptyhub mcp
  codex mcp add ptyhub -- ptyhub mcp

stdout carries only MCP messages; logs go to stderr. ptyhub mcp exits when stdin ends
(the client went away) or on SIGTERM, SIGINT, SIGHUP or SIGQUIT, and then ends every
session it started, with all their processes.

This version always runs its sessions inside the ptyhub mcp process (--embedded); a later
version will use the per-user ptyhub server when --embedded is not given.
`

func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("mcp", mcpHelp)
	fs.Bool("embedded", false, "run sessions inside this process (the only mode in this version)")
	keep := fs.Bool("keep", false, "leave sessions running when the client goes away (needs the ptyhub server; no effect with --embedded)")
	verbose := fs.Bool("verbose", false, "log each tool error and lifecycle event to stderr")
	if code, done := fs.parse(args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "mcp", fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if *keep {
		log.Warn("--keep has no effect with the embedded manager: sessions end with this process")
	}

	mgr, err := session.NewManager(session.Options{Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", oneLine(err.Error()))
		return exitError
	}
	client := mgr.NewClient("mcp")
	log.Debug("serving MCP on stdio")
	err = mcpserver.Run(ctx, client, stdin, stdout, mcpserver.Options{Version: version(), Logger: log})

	// Whatever ended the connection (end of stdin, a broken stdout, a signal), end every
	// session and its processes before exiting (EDGE-CASES 28, 29).
	why := "stdin closed"
	if sig, ok := signalOf(ctx); ok {
		why = signalName(sig.sig)
	} else if err != nil {
		why = err.Error()
	}
	log.Debug("shutting down", "reason", why)
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cerr := client.Close(cctx, *keep); cerr != nil {
		log.Warn("closing the MCP client's sessions", "error", cerr)
	}
	if cerr := mgr.Close(cctx); cerr != nil {
		log.Warn("closing the session manager", "error", cerr)
	}
	if sig, ok := signalOf(ctx); ok {
		return sig.exitCode()
	}
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", oneLine(err.Error()))
		return exitError
	}
	return 0
}
