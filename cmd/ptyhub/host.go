package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ptyhub/ptyhub/remote"
	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
)

// target is the server a command talks to: the per-user server of this machine (socket)
// or of another one (host).
type target struct {
	socket string
	host   string
	// local: ignore --host, PTYHUB_HOST and the global --host (ptyhub mcp's own server).
	local bool
}

// hostKey carries the global --host (given before the command) in the context.
type hostKey struct{}

// withHost returns ctx carrying the global --host.
func withHost(ctx context.Context, host string) context.Context {
	return context.WithValue(ctx, hostKey{}, host)
}

// serverFlags adds --socket and --host to fs.
func serverFlags(fs *flagSet) *target {
	t := &target{}
	fs.StringVar(&t.socket, "socket", "", "server socket `path` (default $PTYHUB_SOCKET, else $XDG_RUNTIME_DIR/ptyhub/server.sock)")
	fs.StringVar(&t.host, "host", "", "the ptyhub server of another machine: ssh://[user@]host[:port], docker://CONTAINER, kube://[NS/]POD[/CONTAINER] or a name from hosts.json (default $PTYHUB_HOST)")
	return t
}

// hostSpec returns the host to talk to ("" for this machine): the command's --host, else
// the global one, else $PTYHUB_HOST.
func (t *target) hostSpec(ctx context.Context) string {
	if t.local {
		return ""
	}
	if t.host != "" {
		return t.host
	}
	if h, _ := ctx.Value(hostKey{}).(string); h != "" {
		return h
	}
	return os.Getenv(remote.EnvHost)
}

// options returns how to reach the target's server as the client name.
func (t *target) options(ctx context.Context, name string, autoStart bool) (server.DialOptions, error) {
	if h := t.hostSpec(ctx); h != "" {
		tg, err := remote.Resolve(h, nil)
		if err != nil {
			return server.DialOptions{}, err
		}
		return remote.DialOptions(tg, remote.Options{Name: name}), nil
	}
	return server.DialOptions{Socket: t.socket, AutoStart: autoStart, Name: name, Warn: noteOnce}, nil
}

// dial connects to the target's server as a service client, starting the local one if
// needed. Sessions started through it run in caller's directory and environment (nil:
// for commands that start none); on another host, in that host's world instead.
func dial(ctx context.Context, t *target, name string, own bool, caller *session.Caller) (*server.Client, error) {
	o, err := t.options(ctx, name, true)
	if err != nil {
		return nil, err
	}
	o.Own = own
	if o.Dialer == nil {
		o.Caller = caller
	}
	return server.Dial(ctx, o)
}

const dialStdioHelp = `Usage:
  ptyhub dial-stdio [--socket PATH]

Joins standard input and output to the per-user ptyhub server of this machine
(starting it if needed). It is the far end of 'ptyhub --host': ssh, docker exec, kubectl
exec or a configured program runs it on the host. Sessions started through it run in
your home directory with the environment this command has, unless the request says
otherwise.
`

func runDialStdio(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("dial-stdio", dialStdioHelp)
	socket := socketFlag(fs)
	if code, done := fs.parseNoArgs(args, "takes no arguments", stdout, stderr); done {
		return code
	}
	if err := server.ServeStdio(ctx, server.DialOptions{Socket: *socket, AutoStart: true, Name: "dial-stdio"}, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "ptyhub dial-stdio: %s\n", oneLine(err.Error()))
		return exitError
	}
	return 0
}
