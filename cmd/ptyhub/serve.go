package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/ptyhub/ptyhub/reaper"
	"github.com/ptyhub/ptyhub/remote"
	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
	"github.com/ptyhub/ptyhub/web"
)

const serveHelp = `Usage:
  ptyhub serve [--socket PATH] [--idle-exit 10m] [--max-sessions N] [--verbose]

Runs the per-user ptyhub server in the foreground. It owns every session and serves the
CLI and 'ptyhub mcp' on a Unix socket: $PTYHUB_SOCKET, else
$XDG_RUNTIME_DIR/ptyhub/server.sock, else /tmp/ptyhub-$UID/server.sock (directory 0700,
socket 0600, only your uid may connect). You rarely need this command: any other command
starts the server when none is running (detached, logging to
$XDG_STATE_HOME/ptyhub/server.log).

The server exits after --idle-exit with no client connected and no running session; on
SIGTERM, SIGINT or SIGQUIT it ends every session with all its processes and removes the
socket. It ignores the hangup of the terminal it was started from. If it is killed
(kill -9), its sessions die with it.

Limits: each 'ptyhub mcp' client may run --max-sessions sessions at once
($PTYHUB_MAX_SESSIONS, default 64), and all CLI sessions together as many; at the limit
the least recently used running session of that client is ended (never one a human is
attached to) and listed as pruned. Finished sessions do not count: the last 64 of each
client are kept as history. The server raises its file-descriptor limit to the hard
limit (sessions get the original) and refuses a new session, with an error naming the
limit, when it runs short, rather than failing its clients.
`

// socketFlag adds --socket to fs; the value overrides PTYHUB_SOCKET.
func socketFlag(fs *flagSet) *string {
	return fs.String("socket", "", "server socket `path` (default $PTYHUB_SOCKET, else $XDG_RUNTIME_DIR/ptyhub/server.sock)")
}

// spareIDFile is where the managers of the server on socket (default SocketPath()) and
// of its session hosts reserve short ids when the state directory cannot be written: a
// file next to the socket, like its lock file (see session.Options.SpareIDFile).
func spareIDFile(socket string) string {
	if socket == "" {
		socket = server.SocketPath()
	}
	return socket + ".ids"
}

var noted sync.Once

// noteOnce prints a note about the server on stderr, once per process.
func noteOnce(msg string) {
	noted.Do(func() { fmt.Fprintf(os.Stderr, "ptyhub: %s\n", msg) })
}

const killServerHelp = `Usage:
  ptyhub kill-server [--socket PATH]

Stops the per-user ptyhub server (of any version) with SIGTERM: it ends every session
with all its processes, as 'ptyhub kill' does, and exits. The next command starts a
server of its own build. Use it after installing a new ptyhub while sessions of the old
one still run. An agent's sessions run in its own 'ptyhub mcp' process and go on.
`

func runKillServer(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("kill-server", killServerHelp)
	socket := serverFlags(fs)
	if code, done := fs.parseNoArgs(args, "takes no arguments", stdout, stderr); done {
		return code
	}
	if h := socket.hostSpec(ctx); h != "" {
		// It signals the server's process, which only this machine can do: stopping the
		// local server instead would end sessions the user did not name.
		how := "--host names"
		if socket.host == "" && ctx.Value(hostKey{}) == nil {
			how = "$" + remote.EnvHost + " names"
		}
		fmt.Fprintf(stderr, "ptyhub kill-server: %s %s, but kill-server stops only the server of the machine it runs on: run 'ptyhub kill-server' on that host; to stop this machine's server, leave out --host and set %s= (empty)\n", how, h, remote.EnvHost)
		return exitUsage
	}
	pid, err := server.KillServer(ctx, socket.socket)
	if err != nil {
		return fail(stderr, "kill-server", err)
	}
	fmt.Fprintf(stdout, "stopped the ptyhub server (pid %d) and its sessions\n", pid)
	return 0
}

func runServe(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", serveHelp)
	socket := socketFlag(fs)
	idle := fs.Duration("idle-exit", 10*time.Minute, "exit after this `duration` without clients and running sessions (0: never)")
	verbose := fs.Bool("verbose", false, "log every connection and session start and end")
	maxSessions := fs.Int("max-sessions", 0, "running sessions allowed per MCP client and for the CLI together (default $PTYHUB_MAX_SESSIONS, else 64)")
	if code, done := fs.parse(args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "serve", fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	// The mark a client sets on a server it starts stays in /proc/PID/environ (as at
	// exec), where the sweeps read it; the server's children do not inherit it.
	os.Unsetenv(reaper.EnvServer)
	hostingProcs()
	hostingGC()
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("pid", os.Getpid())
	if *maxSessions == 0 {
		n, err := maxSessionsEnv()
		if err != nil {
			return usageError(stderr, "serve", err.Error())
		}
		*maxSessions = n
	}
	if *maxSessions < 0 {
		return usageError(stderr, "serve", "--max-sessions must be positive")
	}
	mgr, err := session.NewManager(session.Options{Logger: log, MaxSessions: *maxSessions, SpareIDFile: spareIDFile(*socket)})
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub serve: %s\n", oneLine(err.Error()))
		return exitError
	}
	sock := *socket
	if sock == "" {
		sock = server.SocketPath()
	}
	view := web.New(web.Options{Socket: sock, Logger: log})
	srv, err := server.Listen(mgr, server.Options{Socket: *socket, IdleExit: *idle, Logger: log, Version: version(), Web: view})
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub serve: %s\n", oneLine(err.Error()))
		if errors.Is(err, server.ErrRunning) {
			return exitError
		}
		return exitError
	}
	// Only the server that holds the socket sweeps what a crashed predecessor left.
	mgr.Recover()
	log.Info("serving", "socket", srv.Path())
	err = srv.Serve(ctx)
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if cerr := mgr.Close(cctx); cerr != nil {
		log.Warn("closing the session manager", "error", cerr)
	}
	if sig, ok := signalOf(ctx); ok {
		log.Info("stopped", "signal", signalName(sig.sig))
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub serve: %s\n", oneLine(err.Error()))
		return exitError
	}
	return 0
}
