package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/remote"
	"github.com/ptyhub/ptyhub/session"
)

const execHelp = `Usage:
  ptyhub exec [flags] [--] PROGRAM [ARGUMENT...]
  ptyhub exec [flags] -c 'SHELL COMMAND LINE'

Runs a command on a new pseudo-terminal and prints what a coding agent gets from the
exec_command tool: a short header (exit status, or "Process running"), then the output
with escape sequences removed, cut to --max-tokens (head and tail kept).

The words after the flags are the program and its arguments, run directly, without a
shell (put -- before them when one starts with -). To run a shell command line (pipes,
&&, globs, $VARS), pass it as one string with -c; it runs as $SHELL -c. It runs in the
current directory (--cwd changes it) with your environment (--env adds to it), as if
you had typed it, although the ptyhub server starts it.

ptyhub exec returns when the command exits, waits for input at its terminal, prints
text matching --wait-for, or when --yield has passed (default 10s; a longer --timeout
raises it). The session lives in the per-user ptyhub server: a command still running
when ptyhub exec returns keeps running (a line on stderr says so), as in tmux — see it
with 'ptyhub ls', watch or type with 'ptyhub attach ID', stop it with 'ptyhub kill ID'.
With --embedded the session lives inside the ptyhub exec process instead, and a command
still running when it returns is killed.

Exit status:
  N        the command exited with code N (127: program not found)
  128+N    signal N ended the command (143 for SIGTERM, 137 for SIGKILL)
  124      --timeout killed the command, or it was still running after --yield
  0        the command is still running, but its output matched --wait-for or it
           waits for input
  130/143  ptyhub exec itself got SIGINT/SIGTERM: the command is killed, and a line on
           stderr says so (or that it had already ended)
  2        bad flags or arguments (one line on stderr)
  1        ptyhub failed

Examples:
  ptyhub exec -- echo hello
  ptyhub exec --json -- git status
  ptyhub exec --yield 5m -c 'make test 2>&1 | tail -20'
  ptyhub exec --wait-for 'listening on' -- npm run dev
  ptyhub exec --stdin 'print(6*7)' --close-stdin -- python3 -
`

// envFlag collects repeated --env K=V.
type envFlag map[string]string

func (e envFlag) String() string { return "" }
func (e envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want K=V, got %q", v)
	}
	e[k] = val
	return nil
}

// execArgs is what ptyhub exec's command line asks for.
type execArgs struct {
	req      session.ExecRequest
	yield    time.Duration // how long ptyhub exec waits for the command
	jsonOut  bool
	verbose  bool
	embedded bool
	socket   *target
}

func runExec(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	a, code, done := parseExec(args, stdout, stderr)
	if done {
		return code
	}
	// The command runs where the human typed ptyhub exec, with their environment.
	caller, err := session.Here()
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub exec: %s\n", oneLine(err.Error()))
		return exitError
	}
	if a.embedded && a.socket.hostSpec(ctx) != "" {
		return usageError(stderr, "exec", "--embedded runs on this machine: drop it or --host")
	}
	client, closeClient, err := execClient(ctx, a, caller, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "ptyhub exec: %s\n", oneLine(err.Error()))
		return exitError
	}
	defer closeClient()

	res, err := client.Exec(ctx, a.req)
	if err != nil {
		if sig, ok := signalOf(ctx); ok {
			fmt.Fprintf(stderr, "ptyhub exec: interrupted by %s before the command started: %s\n", signalName(sig.sig), oneLine(err.Error()))
			return sig.exitCode()
		}
		return fail(stderr, "exec", err)
	}
	if code, ok := printExecResult(ctx, res, a.jsonOut, stdout, stderr); !ok {
		return code
	}
	if sig, ok := signalOf(ctx); ok {
		// Ctrl-C (or SIGTERM) on ptyhub exec ends the command too, and says so.
		fmt.Fprintf(stderr, "ptyhub exec: interrupted by %s; %s\n", signalName(sig.sig), endAfterInterrupt(client, res))
		return sig.exitCode()
	}
	status := exitStatus(res)
	if res.State == session.StateRunning && !a.embedded {
		fmt.Fprintf(stderr, "%s\n", stillRunning(ctx, a, res))
	} else if res.State == session.StateRunning {
		fmt.Fprintf(stderr, "%s\n", killEmbedded(client, a, res))
	}
	return status
}

// parseExec parses ptyhub exec's flags and arguments into the request; done says
// ptyhub exec should return code at once (after --help, or a usage error on stderr).
func parseExec(args []string, stdout, stderr io.Writer) (a execArgs, code int, done bool) {
	fs := newFlagSet("exec", execHelp)
	env := envFlag{}
	shellCmd := fs.String("c", "", "run this shell `command line` ($SHELL -c) instead of a program")
	cwd := fs.String("cwd", "", "working `directory` of the command, relative to the current one (must exist)")
	fs.Var(env, "env", "set an environment variable for the command, `K=V` (repeatable)")
	clearEnv := fs.Bool("clear-env", false, "start from an empty environment instead of yours")
	noTTY := fs.Bool("no-tty", false, "use plain pipes (stdout and stderr merged) instead of a pseudo-terminal")
	noShellInt := fs.Bool("no-shell-integration", false, "start an interactive bash, zsh or fish without ptyhub's shell integration (prompt and command marks)")
	yield := fs.Duration("yield", time.Duration(session.DefaultExecYieldMs)*time.Millisecond, "return after this `duration` even if the command still runs (max 10m)")
	maxTokens := fs.Int64("max-tokens", 10_000, "token `budget` of the printed output; longer output keeps its head and tail")
	waitFor := fs.String("wait-for", "", "return as soon as the output matches this `regexp` (Go RE2 syntax)")
	timeout := fs.Duration("timeout", 0, "kill the command after this `duration` (exit status 124)")
	shell := fs.String("shell", "", "`shell` for -c (default $SHELL, else /bin/bash, else /bin/sh)")
	login := fs.Bool("login", false, "run -c in a login shell (-lc); slower")
	stdinText := fs.String("stdin", "", "`text` written to the command right after it starts")
	closeStdin := fs.Bool("close-stdin", false, "send end-of-file after --stdin")
	rows := fs.Int("rows", session.DefaultRows, "terminal `rows`")
	cols := fs.Int("cols", session.DefaultCols, "terminal `columns`")
	profile := fs.String("profile", "", "environment `profile`: agent (TERM=xterm-256color, NO_COLOR=1, no cargo progress bar, pagers off; the default) or plain")
	name := fs.String("name", "", "`name` of the session, usable instead of its id; if a session of that name runs, it is shown instead of starting another")
	fs.BoolVar(&a.jsonOut, "json", false, "print the result as one JSON object (exec_command's structuredContent) instead of text")
	fs.BoolVar(&a.verbose, "verbose", false, "log what ptyhub does to stderr")
	fs.BoolVar(&a.embedded, "embedded", false, "run the session inside this process (killed when ptyhub exec returns) instead of the ptyhub server")
	a.socket = serverFlags(fs)
	if code, done := fs.parse(args, stdout, stderr); done {
		return a, code, true
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	a.req = session.ExecRequest{
		Cmd: *shellCmd, Argv: fs.Args(), Workdir: *cwd, Shell: *shell, Login: *login,
		ClearEnv: *clearEnv, Stdin: *stdinText, CloseStdin: *closeStdin,
		Rows: *rows, Cols: *cols, WaitFor: *waitFor, Profile: *profile,
		MaxOutputTokens: maxTokens, Name: *name,
	}
	switch {
	case set["c"] && fs.NArg() > 0:
		return a, usageError(stderr, "exec", "give a program and its arguments, or -c with a shell command line, not both"), true
	case set["c"] && *shellCmd == "":
		return a, usageError(stderr, "exec", "-c needs a shell command line"), true
	case !set["c"] && fs.NArg() == 0:
		return a, usageError(stderr, "exec", "no command: give a program after the flags, or -c 'shell command line'"), true
	case !set["c"] && looksLikeShellLine(fs.Args()):
		return a, usageError(stderr, "exec", fmt.Sprintf("%q is not a program; to run a shell command line use: ptyhub exec -c %s", fs.Arg(0), shellQuote(fs.Arg(0)))), true
	}
	if len(env) > 0 {
		a.req.Env = env
	}
	if *noTTY {
		f := false
		a.req.TTY = &f
	}
	if *noShellInt {
		f := false
		a.req.ShellIntegration = &f
	}
	y := *yield
	if *timeout > 0 {
		a.req.TimeoutMs = timeout.Milliseconds()
		if !set["yield"] && *timeout+time.Second > y {
			// Wait for the program up to its hard limit, not the default yield.
			y = *timeout + time.Second
		}
	} else if *timeout < 0 {
		a.req.TimeoutMs = timeout.Milliseconds() // the session says what is wrong
	}
	if !set["yield"] && y > time.Duration(session.MaxYieldMs)*time.Millisecond {
		y = time.Duration(session.MaxYieldMs) * time.Millisecond
	}
	yms := y.Milliseconds()
	a.req.YieldTimeMs = &yms
	a.yield = y
	return a, 0, false
}

// execClient connects ptyhub exec to the per-user server, or with --embedded starts a
// session manager inside this process. closeClient ends the connection; with
// --embedded it also closes the manager, killing every process it started.
func execClient(ctx context.Context, a execArgs, caller session.Caller, stderr io.Writer) (client session.Service, closeClient func(), err error) {
	if !a.embedded {
		c, err := dial(ctx, a.socket, "exec", false, &caller)
		if err != nil {
			return nil, nil, err
		}
		return c, func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c.Close(cctx, true)
		}, nil
	}
	level := slog.LevelWarn
	if a.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	mgr, err := session.NewManager(session.Options{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	c, err := mgr.NewClientFor("exec", caller)
	if err != nil {
		return nil, nil, err
	}
	// The manager (and every process it started) ends with this command.
	return c, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Close(cctx, false)
		if err := mgr.Close(cctx); err != nil {
			log.Warn("closing the session manager", "error", err)
		}
	}, nil
}

// printExecResult prints res on stdout, as JSON or as exec_command's text (only the
// output after an interrupt). ok is false when printing failed, and ptyhub exec should
// return code.
func printExecResult(ctx context.Context, res *session.Result, jsonOut bool, stdout, stderr io.Writer) (code int, ok bool) {
	if jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "ptyhub exec: %v\n", err)
			return exitError, false
		}
		return 0, true
	}
	text := res.TextIn(cliWords)
	if _, interrupted := signalOf(ctx); interrupted {
		// Only the output: the header would describe the session before the kill
		// in runExec; the line on stderr says how it ended.
		text = res.Output
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	io.WriteString(stdout, text)
	return 0, true
}

// stillRunning is the line saying that res's session runs on in the server, and how to
// take it over or stop it.
func stillRunning(ctx context.Context, a execArgs, res *session.Result) string {
	why := whyRunning(res, a.yield, false)
	// The hint's commands reach the same server: a --host that PTYHUB_HOST does not
	// give again is part of them.
	me := "ptyhub"
	if h := a.socket.hostSpec(ctx); h != "" && h != os.Getenv(remote.EnvHost) {
		me += " --host " + h
	}
	return fmt.Sprintf("ptyhub exec: session %s %s: '%s attach %s' to take over, '%s kill %s' to stop it",
		res.SessionID, why, me, res.SessionID, me, res.SessionID)
}

// killEmbedded kills res's session, still running inside this process (--embedded)
// when ptyhub exec returns, and returns the line saying so.
func killEmbedded(client session.Service, a execArgs, res *session.Result) string {
	kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, kerr := client.Kill(kctx, session.KillRequest{SessionID: res.SessionID})
	cancel()
	why := whyRunning(res, a.yield, true)
	if kerr != nil {
		return fmt.Sprintf("ptyhub exec: session %s %s; killing it failed: %s", res.SessionID, why, oneLine(kerr.Error()))
	}
	return fmt.Sprintf("ptyhub exec: session %s %s; killed it (--embedded)", res.SessionID, why)
}

// whyRunning says why ptyhub exec returned while res's session runs: in the present
// tense when it runs on in the server, in the past when killed (--embedded).
func whyRunning(res *session.Result, yield time.Duration, killed bool) string {
	now, then := "is still running", "was still running when ptyhub exec returned"
	switch res.ReturnedBecause {
	case session.BecauseDeadline:
		now = fmt.Sprintf("is still running after --yield %s", yield)
		then = fmt.Sprintf("was still running after --yield %s", yield)
	case session.BecauseWaitingForInput:
		now, then = "is waiting for input", "was waiting for input (pass it with --stdin)"
	case session.BecausePattern:
		now, then = "matched --wait-for and is still running", "matched --wait-for and was still running"
	}
	if killed {
		return then
	}
	return now
}

// endAfterInterrupt ends the session of res after ptyhub exec was interrupted, and says
// what became of it.
func endAfterInterrupt(client session.Service, res *session.Result) string {
	if res.State != session.StateRunning {
		return fmt.Sprintf("session %s had already ended (%s)", res.SessionID, endedText(res.ExitCode, res.Signal, res.TimedOut))
	}
	kctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, err := client.Kill(kctx, session.KillRequest{SessionID: res.SessionID})
	if err != nil {
		return fmt.Sprintf("session %s may still be running: killing it failed: %s ('ptyhub kill %s' stops it)", res.SessionID, oneLine(err.Error()), res.SessionID)
	}
	return fmt.Sprintf("killed session %s and its processes (%s)", res.SessionID, endedText(k.ExitCode, k.Signal, false))
}

// endedText says how a session ended: "exit code 0", "killed by signal SIGHUP".
func endedText(code *int, sig string, timedOut bool) string {
	switch {
	case timedOut:
		return "timed out"
	case sig != "":
		return "killed by signal " + sig
	case code != nil:
		return fmt.Sprintf("exit code %d", *code)
	}
	return "ended"
}

// exitStatus maps a result to ptyhub exec's exit status (see execHelp).
func exitStatus(r *session.Result) int {
	switch {
	case r.State == session.StateRunning:
		if r.ReturnedBecause == session.BecauseDeadline || r.ReturnedBecause == session.BecauseCancelled {
			return 124
		}
		return 0
	case r.TimedOut:
		return 124
	case r.Signal != "":
		if n := unix.SignalNum(r.Signal); n != 0 {
			return 128 + int(n)
		}
		return exitError
	case r.ExitCode != nil:
		if c := *r.ExitCode; c >= 0 && c <= 255 {
			return c
		}
		return exitError
	}
	return exitError
}

// looksLikeShellLine reports a single program argument that is really a shell command
// line ("make test | tail"): it has spaces or shell syntax and names no program.
func looksLikeShellLine(args []string) bool {
	if len(args) != 1 || !strings.ContainsAny(args[0], " \t\n|&;<>()$`'\"*?~") {
		return false
	}
	if strings.Contains(args[0], "/") {
		if _, err := os.Stat(args[0]); err == nil {
			return false
		}
	} else if _, err := osexec.LookPath(args[0]); err == nil {
		return false
	}
	return true
}

// shellQuote quotes s for a POSIX shell, in single quotes.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
