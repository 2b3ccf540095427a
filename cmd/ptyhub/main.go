// Command ptyhub runs interactive programs on pseudo-terminals for coding agents (over
// MCP) and for humans.
//
//	ptyhub exec -- CMD...     run a command, print what an agent would get
//	ptyhub ls                 list the sessions of the per-user server
//	ptyhub attach ID          watch and type into a session (detach: ctrl-])
//	ptyhub mcp                serve the MCP tools on stdin/stdout
//	ptyhub serve              run the per-user server in the foreground
//	ptyhub version
//
// Run `ptyhub help` or `ptyhub COMMAND --help` for details.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/remote"
)

func main() {
	if !needsSignals(os.Args[1:], os.Getenv(remote.EnvHost)) {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	stopOn := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		// The server survives the hangup of the terminal it was started from;
		// SIGHUP is still caught, so sessions get the default disposition.
		stopOn = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT}
	}
	ctx, stop := signalContext(stopOn...)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// needsSignals reports whether the command args name runs with signalContext, whose
// signal.Notify costs every start two threads (the runtime's signal loop blocks one) and
// ~20 page faults. hostEnv is $PTYHUB_HOST. The commands that run without it only print
// (the version, the help) or ask this machine's server one question and print the answer
// (ls, status, screen): they start no session and hold nothing to clean up (a server that
// ls or screen starts runs in its own session and catches signals itself; the connection
// they drop is the server's to close), so a signal's default effect ends them the same
// way. What differs: Ctrl-C ends one with the signal's status (130) instead of an error
// line and status 1, Ctrl-\ prints the goroutines' stacks, and a stdout closed before the
// text is written ends one by SIGPIPE (as it ends cat or ls) instead of a write error it
// would ignore. Every other command keeps it, and so does a command for another host
// (--host before or after the command, or $PTYHUB_HOST), whose transport (ssh, docker,
// kubectl) it starts and waits on.
func needsSignals(args []string, hostEnv string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "version", "-version", "--version", "help", "-h", "-help", "--help":
		return false
	case "ls", "status", "screen":
		if hostEnv != "" {
			return true
		}
		for _, a := range args[1:] {
			if a == "--" {
				break
			}
			if a == "--host" || a == "-host" || strings.HasPrefix(a, "--host=") || strings.HasPrefix(a, "-host=") {
				return true
			}
		}
		return false
	}
	return true
}

// signalError is the cancel cause of run's context when a signal arrived.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return "received " + signalName(e.sig) }

// exitCode is the conventional status of a process ended by a signal.
func (e *signalError) exitCode() int { return 128 + int(e.sig) }

// signalContext returns a context cancelled, with a *signalError cause, at the first of
// the stopOn signals (ptyhub serve leaves SIGHUP out).
//
// Catching these signals (and SIGPIPE) also matters for children: a caught signal is reset
// to its default disposition in a child, where an inherited SIG_IGN (ptyhub started with &
// or under nohup) would be passed on and break Ctrl-C and hangup in every session.
// SIGPIPE is caught so that a write to a closed stdout returns EPIPE
// instead of killing the process without cleanup; the write error then
// ends the MCP connection like the end of stdin does. SIGPIPE does not cancel the context:
// it may come from a write to a session's pipe, which is no reason to stop.
func signalContext(stopOn ...syscall.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	done := make(chan struct{})
	// The signal goroutine: owned by main, stops when stop is called.
	go func() {
		for {
			select {
			case s := <-ch:
				if sig, ok := s.(syscall.Signal); ok && slices.Contains(stopOn, sig) {
					cancel(&signalError{sig})
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// signalOf returns the signal that cancelled ctx, if one did.
func signalOf(ctx context.Context) (*signalError, bool) {
	var se *signalError
	ok := errors.As(context.Cause(ctx), &se)
	return se, ok
}

// Exit statuses of usage errors and other errors.
const (
	exitError = 1
	exitUsage = 2
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

var commands []command

func init() {
	commands = []command{
		{"exec", "run a command on a pseudo-terminal and print what an agent would get", runExec},
		{"write", "type into a session, then print its new output", runWrite},
		{"read", "print a session's output (-f to follow)", runRead},
		{"wait", "wait until the first of some sessions exits, waits for input or matches", runWait},
		{"ls", "list the sessions", runLs},
		{"status", "the server's sessions by state, file descriptors and memory", runStatus},
		{"attach", "attach your terminal to a session (detach with ctrl-])", runAttach},
		{"shell", "start your $SHELL as a session your agent can see, attached (like tmux new-session)", runShell},
		{"kill", "end a session's processes, or send one signal", runKill},
		{"rm", "end a session and forget it", runRm},
		{"logs", "print everything a session printed (-f to follow)", runLogs},
		{"screen", "print a session's current screen", runScreen},
		{"web", "show every session in your browser, live (prints the URL)", runWeb},
		{"ask-human", "ask a person to take over a session and wait until they are done", runAskHuman},
		{"serve", "run the per-user server in the foreground", runServe},
		{"kill-server", "stop the per-user server and every session it runs", runKillServer},
		{"dial-stdio", "join stdin and stdout to this machine's server (the far end of --host)", runDialStdio},
		{"mcp", "serve the MCP tools (exec_command, write_stdin, ...) on stdin and stdout", runMCP},
		{"version", "print the version", runVersion},
		{"help", "show help for ptyhub or one command", runHelp},
	}
}

// run is the whole program behind main, testable: it parses args (without the program
// name) and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitUsage
	}
	// The global --host, before the command (as docker -H).
	for len(args) > 0 && (args[0] == "--host" || args[0] == "-host" || strings.HasPrefix(args[0], "--host=")) {
		if v, ok := strings.CutPrefix(args[0], "--host="); ok {
			ctx = withHost(ctx, v)
			args = args[1:]
			continue
		}
		if len(args) < 2 {
			fmt.Fprintln(stderr, "ptyhub: --host needs a value: ssh://[user@]host[:port], docker://CONTAINER, kube://[NS/]POD[/CONTAINER] or a name from hosts.json")
			return exitUsage
		}
		ctx = withHost(ctx, args[1])
		args = args[2:]
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return 0
	case "-version", "--version":
		return runVersion(ctx, nil, stdin, stdout, stderr)
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, args[1:], stdin, stdout, stderr)
		}
	}
	if strings.HasPrefix(name, "-") {
		fmt.Fprintf(stderr, "ptyhub: unknown flag %q: flags go after the command; see 'ptyhub help'\n", name)
		return exitUsage
	}
	fmt.Fprintf(stderr, "ptyhub: unknown command %q; see 'ptyhub help'\n", name)
	return exitUsage
}

func usage() string {
	var b strings.Builder
	b.WriteString(`ptyhub runs interactive programs on pseudo-terminals for coding agents and humans.

Usage:
  ptyhub [--host HOST] COMMAND [flags] [arguments]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-11s  %s\n", c.name, c.summary)
	}
	b.WriteString(`
Examples:
  ptyhub exec -- ls -l                 run a program (no shell)
  ptyhub exec -c 'make test | tail'    run a shell command line
  ptyhub exec -- bash                  start a shell that stays in 'ptyhub ls'
  ptyhub attach 1                      take its keyboard; ctrl-] detaches
  claude mcp add ptyhub -- ptyhub mcp  let Claude Code start the MCP server

Every command except 'mcp --embedded' and 'exec --embedded' talks to the per-user
ptyhub server (started on first use; --socket or PTYHUB_SOCKET selects another one).

Run 'ptyhub COMMAND --help' for the flags of a command.
`)
	return b.String()
}

func runHelp(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage())
		return 0
	}
	if len(args) > 1 {
		fmt.Fprintln(stderr, "ptyhub help: give at most one command")
		return exitUsage
	}
	for _, c := range commands {
		if c.name == args[0] && c.name != "help" {
			return c.run(ctx, []string{"--help"}, stdin, stdout, stderr)
		}
	}
	if args[0] == "help" {
		fmt.Fprint(stdout, usage())
		return 0
	}
	fmt.Fprintf(stderr, "ptyhub help: unknown command %q\n", args[0])
	return exitUsage
}

func runVersion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "Usage: ptyhub version\n\nPrints the version of ptyhub and of the Go toolchain that built it.\n")
	if code, done := fs.parseNoArgs(args, "takes no arguments", stdout, stderr); done {
		return code
	}
	fmt.Fprintf(stdout, "ptyhub %s (%s %s/%s)\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// version is the module version when built by `go install …@version`, else "devel" with
// the VCS revision when known.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "-" + s.Value[:12]
		}
	}
	return v
}

// flagSet is a command's flags and its --help text.
type flagSet struct {
	*flag.FlagSet
	help string // printed by --help before the flags
}

// newFlagSet returns a flag set that reports errors to parse instead of printing them.
func newFlagSet(name, help string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{fs, help}
}

// parse parses args; done says the command should return code at once (after --help,
// exit 0, or a usage error, exit 2).
func (fs *flagSet) parse(args []string, stdout, stderr io.Writer) (code int, done bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, fs.helpText())
		return 0, true
	}
	if err != nil {
		return usageError(stderr, fs.Name(), err.Error()), true
	}
	return 0, false
}

// parseNoArgs parses args (flags first) of a command that takes no positional
// arguments; when some are left, it prints the usage error wrong. done says the command
// should return code at once, as for parse.
func (fs *flagSet) parseNoArgs(args []string, wrong string, stdout, stderr io.Writer) (code int, done bool) {
	if code, done := fs.parse(args, stdout, stderr); done {
		return code, true
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs.Name(), wrong), true
	}
	return 0, false
}

// usageError prints one line and returns the usage status.
func usageError(stderr io.Writer, cmd, msg string) int {
	fmt.Fprintf(stderr, "ptyhub %s: %s (see 'ptyhub %s --help')\n", cmd, msg, cmd)
	return exitUsage
}

// helpText is the command's help: its text, then its flags GNU-style (--name VALUE).
func (fs *flagSet) helpText() string {
	var b strings.Builder
	b.WriteString(fs.help)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return b.String()
	}
	b.WriteString("\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		value, text := flag.UnquoteUsage(f)
		head := "  " + dash + f.Name
		if value != "" {
			head += " " + value
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" && def != "[]" {
			text += " (default " + def + ")"
		}
		if len(head) <= 22 {
			fmt.Fprintf(&b, "%-24s%s\n", head, text)
		} else {
			fmt.Fprintf(&b, "%s\n%24s%s\n", head, "", text)
		}
	})
	return b.String()
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
