package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/ptyhub/ptyhub/session"
)

const shellHelp = `Usage:
  ptyhub shell [--name NAME] [--no-shell-integration]

Starts your $SHELL (else /bin/bash) as a session of the ptyhub server, in the current
directory with your environment, and attaches your terminal to it, as tmux new-session
does. Detach with ctrl-] (the shell keeps running); 'ptyhub attach ID' returns to it.

A bash, zsh or fish gets ptyhub's shell integration (your rc files still run, unchanged):
ptyhub then knows each command line you run, its exit code and the shell's directory,
so your coding agent can see them in list_sessions (and 'ptyhub ls' in the CWD and
COMMAND columns) and read the output with read_output, for instance to answer "why did
my last command fail?". With --name, a running session of that name is attached again
instead of starting another.
`

func runShell(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("shell", shellHelp)
	name := fs.String("name", "", "`name` of the session, usable instead of its id; if a session of that name runs, attach to it")
	noShellInt := fs.Bool("no-shell-integration", false, "start the shell without ptyhub's shell integration")
	socket := serverFlags(fs)
	if code, done := fs.parseNoArgs(args, "takes no arguments (the shell is $SHELL)", stdout, stderr); done {
		return code
	}
	fd := int(os.Stdin.Fd())
	if !term.IsTerminal(fd) {
		return fail(stderr, "shell", fmt.Errorf("standard input is not a terminal; ptyhub shell attaches your terminal to the shell (an agent starts one with exec_command {cmd: \"bash\"})"))
	}
	rows, cols := session.DefaultRows, session.DefaultCols
	if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
		rows, cols = min(h, session.MaxRows), min(w, session.MaxCols)
	}
	sh := os.Getenv("SHELL")
	if sh == "" {
		sh = "/bin/bash"
	}
	caller, err := session.Here()
	if err != nil {
		return fail(stderr, "shell", err)
	}
	c, err := dial(ctx, socket, "shell", false, &caller)
	if err != nil {
		return fail(stderr, "shell", err)
	}
	zero := int64(0)
	req := session.ExecRequest{Argv: []string{sh}, Name: *name, Rows: rows, Cols: cols,
		Profile: session.ProfilePlain, YieldTimeMs: &zero}
	if *noShellInt {
		f := false
		req.ShellIntegration = &f
	}
	res, err := c.Exec(ctx, req)
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	c.Close(cctx, true)
	cancel()
	if err != nil {
		return fail(stderr, "shell", err)
	}
	// The same server: the flags that chose it go to attach too.
	att := []string{res.SessionID}
	if socket.socket != "" {
		att = append(att, "--socket", socket.socket)
	}
	if socket.host != "" {
		att = append(att, "--host", socket.host)
	}
	return runAttach(ctx, att, stdin, stdout, stderr)
}
