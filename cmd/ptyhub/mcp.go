package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ptyhub/ptyhub/mcpserver"
	"github.com/ptyhub/ptyhub/remote"
	"github.com/ptyhub/ptyhub/route"
	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
)

const mcpHelp = `Usage:
  ptyhub mcp [--host HOST] [--workdir DIR] [--pass-env NAME]... [--embedded] [--keep] [--socket PATH] [--verbose]

Serves ptyhub's MCP tools (exec_command, write_stdin, read_output, list_sessions,
kill_session, resize_session, wait_sessions) on stdin and stdout, for a coding agent
that starts it:

  claude mcp add ptyhub -- ptyhub mcp
  codex mcp add ptyhub -- ptyhub mcp

stdout carries only MCP messages; logs go to stderr. ptyhub mcp exits when stdin ends
(the client went away) or on SIGTERM, SIGINT, SIGHUP or SIGQUIT, and then ends every
session it started, with all their processes (with --keep they stay for a human to find
with 'ptyhub ls').

Commands run in the directory ptyhub mcp was started in (--workdir DIR instead; a
relative workdir argument of exec_command resolves against it) and with ptyhub mcp's
environment (what the agent's MCP configuration set), except variables whose names
contain KEY, SECRET, TOKEN or PASSWORD (in any case): they are not passed to commands
unless --pass-env NAME allows them (repeatable; NAME may be a pattern such as 'AWS_*').
exec_command's env argument sets any variable.

The sessions run in this process (no other process on the agent's path) and are
served to the rest of your world on a socket next to the per-user server's: a human
sees them with 'ptyhub ls' and can 'ptyhub attach' to type a password or answer a
prompt. list_sessions and the tools also reach the sessions of the per-user server
(started when needed) and of other agents. --keep runs the sessions in the per-user
server instead, where they outlive this process; --embedded runs them here without the
socket, invisible to the CLI.

Other machines: exec_command's host argument (or --host, or $PTYHUB_HOST, for every
exec_command without one) runs the command on another machine through ssh, docker exec,
kubectl exec or a program named in hosts.json; there it starts in the remote user's
home directory with the remote environment. Its session id reads HOST:ID and every
tool accepts it; list_sessions covers this machine and every host used. One connection
per host serves every call and is made again when it drops; the host keeps the sessions
for 60 s for this client to come back.
`

func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("mcp", mcpHelp)
	embedded := fs.Bool("embedded", false, "run sessions inside this process, invisible to the CLI")
	keep := fs.Bool("keep", false, "run sessions in the per-user server and leave them running when the client goes away (no effect with --embedded)")
	socket := serverFlags(fs)
	verbose := fs.Bool("verbose", false, "log each tool error and lifecycle event to stderr")
	workdir := fs.String("workdir", "", "run commands in this `directory` (default: the current one)")
	var passEnv keysFlag
	fs.Var(&passEnv, "pass-env", "pass this credential-like variable (`NAME` or pattern, repeatable) to commands")
	if code, done := fs.parse(args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "mcp", fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	hostingProcs()
	hostingGC()
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	caller, err := mcpCaller(*workdir, passEnv)
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	log.Debug("commands run here", "dir", caller.Dir)
	if *keep && !*embedded {
		return runMCPClient(ctx, socket, *keep, &caller, stdin, stdout, stderr, log)
	}
	if !*embedded {
		return runMCPHosted(ctx, socket, &caller, stdin, stdout, stderr, log)
	}
	if socket.host != "" {
		fmt.Fprintln(stderr, "ptyhub mcp: --host needs the server: drop --embedded")
		return exitUsage
	}
	if *keep {
		log.Warn("--keep has no effect with the embedded manager: sessions end with this process")
	}

	mgr, code := agentManager(log, stderr, "")
	if mgr == nil {
		return code
	}
	client, err := mgr.NewClientFor("mcp", caller)
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", oneLine(err.Error()))
		return exitError
	}
	log.Debug("serving MCP on stdio")
	return serveMCP(ctx, client, nil, stdin, stdout, stderr, log, func(cctx context.Context) {
		if err := client.Close(cctx, *keep); err != nil {
			log.Warn("closing the MCP client's sessions", "error", err)
		}
		if err := mgr.Close(cctx); err != nil {
			log.Warn("closing the session manager", "error", err)
		}
	})
}

// runMCPClient serves MCP with the sessions in the per-user server. This connection owns
// the sessions it starts: they end when ptyhub mcp exits, unless keep.
func runMCPClient(ctx context.Context, socket *target, keep bool, caller *session.Caller, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger) int {
	client, err := dial(ctx, &target{socket: socket.socket, local: true}, "mcp", true, caller)
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", oneLine(err.Error()))
		return exitError
	}
	log.Debug("serving MCP on stdio", "server_pid", client.ServerPID())
	hosts, router, err := agentRouter(ctx, client, socket)
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", err)
		client.Close(ctx, false)
		return exitUsage
	}
	// The servers end this client's sessions (unless keep) before answering the close.
	return serveMCP(ctx, router, webURL(socket.socket), stdin, stdout, stderr, log, func(cctx context.Context) {
		if err := hosts.Close(cctx, keep); err != nil {
			log.Warn("closing the host connections", "error", err)
		}
		if err := client.Close(cctx, keep); err != nil {
			log.Warn("closing the server connection", "error", err)
		}
	})
}

// runMCPHosted serves MCP with the sessions in this process, served to the CLI on a host
// socket next to the per-user server's (server.ListenHost, which also shows the hosts
// the agent uses); the tools also reach the sessions of that server (and through it of
// the other agents) and of other hosts (route.Router). Sessions end when ptyhub mcp
// exits. When the host socket cannot be made, the sessions go to the server
// (runMCPClient).
func runMCPHosted(ctx context.Context, socket *target, caller *session.Caller, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger) int {
	hosts, err := agentHosts(ctx, socket)
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", err)
		return exitUsage
	}
	mgr, code := agentManager(log, stderr, spareIDFile(socket.socket))
	if mgr == nil {
		return code
	}
	seen := hosts.Seen()
	host, err := server.ListenHost(mgr, server.Options{Socket: socket.socket, Logger: log, Version: version(),
		Members: seen.Members, Host: seen.Host})
	var refused *server.RefusedError
	if errors.As(err, &refused) {
		// The socket directory is, or could be, another user's: the server's socket in
		// it is refused too, so say so now.
		mgr.Close(context.Background())
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", oneLine(err.Error()))
		return exitError
	}
	if err != nil {
		log.Warn("cannot serve this process's sessions to the CLI; running them in the ptyhub server", "error", err)
		mgr.Close(context.Background())
		return runMCPClient(ctx, socket, false, caller, stdin, stdout, stderr, log)
	}
	hostCtx, stopHost := context.WithCancel(context.Background())
	hostDone := make(chan struct{})
	// The host server: owned by this function, ends when stopHost is called.
	go func() { host.Serve(hostCtx); close(hostDone) }()
	client, err := mgr.NewClientFor("mcp", *caller)
	if err != nil {
		stopHost()
		<-hostDone
		mgr.Close(context.Background())
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", oneLine(err.Error()))
		return exitError
	}
	log.Debug("serving MCP on stdio", "host_socket", host.Path())
	user := userServer(socket.socket)
	router := &route.Router{Local: client, Host: hosts.Host, DefaultHost: socket.hostSpec(ctx),
		Members: func(ctx context.Context) ([]route.Member, []string) {
			ms, warns := hosts.Members(ctx)
			return append([]route.Member{{Name: user.Name, Svc: user}}, ms...), warns
		}}
	return serveMCP(ctx, router, webURL(socket.socket), stdin, stdout, stderr, log, func(cctx context.Context) {
		if err := hosts.Close(cctx, false); err != nil {
			log.Warn("closing the host connections", "error", err)
		}
		if err := client.Close(cctx, false); err != nil {
			log.Warn("closing the MCP client's sessions", "error", err)
		}
		stopHost()
		<-hostDone
		seen.Close(cctx, false)
		user.Abandon()
		if err := mgr.Close(cctx); err != nil {
			log.Warn("closing the session manager", "error", err)
		}
	})
}

// agentManager returns the manager of the sessions this process runs ($PTYHUB_MAX_SESSIONS
// running at once; short ids reserved in spareIDs when the state directory cannot be
// written, see session.Options.SpareIDFile), or nil and the exit status after saying why
// on stderr.
func agentManager(log *slog.Logger, stderr io.Writer, spareIDs string) (*session.Manager, int) {
	max, err := maxSessionsEnv()
	if err != nil {
		return nil, usageError(stderr, "mcp", err.Error())
	}
	mgr, err := session.NewManager(session.Options{Logger: log, MaxSessions: max, SpareIDFile: spareIDs})
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", oneLine(err.Error()))
		return nil, exitError
	}
	// At start, not at the first session: what an agent that died with its reaper left
	// running is ended now, aside, even if this agent never runs a command.
	mgr.Recover()
	return mgr, 0
}

// agentHosts returns the other machines an agent names (exec_command's host, or
// socket's --host / $PTYHUB_HOST as the default), each reached on first use over one
// connection that this client owns under one token, so a dropped connection gives its
// sessions a grace period. An unusable default host is an error.
func agentHosts(ctx context.Context, socket *target) (*remote.Hosts, error) {
	if h := socket.hostSpec(ctx); h != "" {
		if _, err := remote.Resolve(h, nil); err != nil {
			return nil, fmt.Errorf("--host: %s", oneLine(err.Error()))
		}
	}
	return &remote.Hosts{Options: remote.Options{Name: "mcp", Own: true, Token: remote.NewToken()}}, nil
}

// agentRouter routes an agent's calls over local (this machine) and the hosts it names.
func agentRouter(ctx context.Context, local session.Service, socket *target) (*remote.Hosts, *route.Router, error) {
	hosts, err := agentHosts(ctx, socket)
	if err != nil {
		return nil, nil, err
	}
	return hosts, &route.Router{Local: local, Host: hosts.Host, Members: hosts.Members, DefaultHost: socket.hostSpec(ctx),
		LocalName: "the ptyhub server"}, nil
}

// webURL returns a function that starts the browser view in the per-user server on
// socket (starting the server if needed) and returns its URL.
func webURL(socket string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		c, err := server.Dial(ctx, server.DialOptions{Socket: socket, AutoStart: true, Name: "mcp"})
		if err != nil {
			return "", err
		}
		defer c.Close(ctx, true)
		return c.Web(ctx, "")
	}
}

// userServer is the per-user server as a member of a hosting ptyhub mcp's router:
// connected (and started) when the agent first names a session this process does not
// have, or lists the sessions; a watch of the sessions connects only to a server that
// runs.
func userServer(socket string) *route.Peer {
	dial := func(start bool) func(ctx context.Context) (route.Conn, error) {
		return func(ctx context.Context) (route.Conn, error) {
			c, err := server.Dial(ctx, server.DialOptions{Socket: socket, AutoStart: start, Name: "mcp", Warn: noteOnce})
			if err != nil {
				return nil, errors.New(oneLine(err.Error()))
			}
			return c, nil
		}
	}
	return &route.Peer{Name: "the ptyhub server", Dial: dial(true), Look: dial(false),
		Lost: func(err error) bool { return errors.Is(err, server.ErrConnLost) }}
}

// maxSessionsEnv is $PTYHUB_MAX_SESSIONS (0 when unset: the default).
func maxSessionsEnv() (int, error) {
	v := os.Getenv("PTYHUB_MAX_SESSIONS")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("PTYHUB_MAX_SESSIONS=%q is not a positive number", v)
	}
	return n, nil
}

// mcpCaller is where the agent's commands run: the directory ptyhub mcp was started in
// (or workdir, resolved against it) and its environment without credentials (variables
// whose names session.IsSecretName marks), except those passEnv allows.
func mcpCaller(workdir string, passEnv []string) (session.Caller, error) {
	c, err := session.Here()
	if err != nil {
		return c, err
	}
	if workdir != "" {
		if !filepath.IsAbs(workdir) {
			workdir = filepath.Join(c.Dir, workdir)
		}
		workdir = filepath.Clean(workdir)
		fi, err := os.Stat(workdir)
		if err != nil {
			return c, fmt.Errorf("--workdir: %w", err)
		}
		if !fi.IsDir() {
			return c, fmt.Errorf("--workdir %s is not a directory", workdir)
		}
		c.Dir = workdir
	}
	var allow []string
	for _, p := range passEnv {
		allow = append(allow, strings.Split(p, ",")...)
	}
	c.Env, _ = session.WithoutSecrets(c.Env, allow)
	return c, nil
}

// serveMCP serves the MCP tools on stdio until the connection ends (end of stdin, a
// broken stdout, a signal), then calls shutdown, which must end this client's sessions
// and their processes, and returns ptyhub mcp's exit status.
// web, when not nil, gives ask_human the browser view's URL.
func serveMCP(ctx context.Context, svc session.Service, web func(context.Context) (string, error), stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger, shutdown func(context.Context)) int {
	err := mcpserver.Run(ctx, svc, stdin, stdout, mcpserver.Options{Version: version(), Logger: log, WebURL: web})
	why := "stdin closed"
	if sig, ok := signalOf(ctx); ok {
		why = signalName(sig.sig)
	} else if err != nil {
		why = err.Error()
	}
	log.Debug("shutting down", "reason", why)
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	shutdown(cctx)
	if sig, ok := signalOf(ctx); ok {
		return sig.exitCode()
	}
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub mcp: %s\n", oneLine(err.Error()))
		return exitError
	}
	return 0
}
