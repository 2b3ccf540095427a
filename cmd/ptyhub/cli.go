package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
	"github.com/ptyhub/ptyhub/termtext"
	"github.com/ptyhub/ptyhub/transcript"
)

// parseMixed parses flags that may come before or after the positional arguments
// (ptyhub write 3 --key Enter); "--" ends the flags.
func (fs *flagSet) parseMixed(args []string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	for {
		if code, done := fs.parse(args, stdout, stderr); done {
			return nil, code, true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, false
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), 0, false
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseArgs parses args as parseMixed does and checks that exactly want positional
// arguments are left; when not, it prints the usage error wrong. done says the command
// should return code at once, as for parse.
func (fs *flagSet) parseArgs(args []string, want int, wrong string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	pos, code, done = fs.parseMixed(args, stdout, stderr)
	if done {
		return nil, code, true
	}
	if len(pos) != want {
		return nil, usageError(stderr, fs.Name(), wrong), true
	}
	return pos, 0, false
}

// fail prints err as one line, with what to do next in the CLI's words, and returns the
// exit status for it.
func fail(stderr io.Writer, cmd string, err error) int {
	hint := ""
	switch {
	case errors.Is(err, session.ErrNotFound):
		hint = "; 'ptyhub ls' lists the sessions"
	case errors.Is(err, session.ErrExited) && strings.Contains(err.Error(), session.ExitedUnread):
		hint = "; 'ptyhub write ID' without text prints it and the exit"
	case errors.Is(err, session.ErrExited):
		hint = "; 'ptyhub read ID' shows its output"
	case errors.Is(err, session.ErrLimit):
		hint = "; 'ptyhub rm ID' removes one"
	}
	msg := err.Error()
	var ae *session.ArgError
	if errors.As(err, &ae) {
		// The engine names the argument as the tools do; say the flag the user typed.
		msg = ae.Text(flagName)
	}
	fmt.Fprintf(stderr, "ptyhub %s: %s%s\n", cmd, oneLine(msg), hint)
	if errors.Is(err, session.ErrInvalid) {
		return exitUsage
	}
	return exitError
}

// cliWords point the reader of a result's text to the CLI's commands, not the tools.
var cliWords = session.Words{
	ReadRange: func(id string, from, to int64) string {
		return fmt.Sprintf("ptyhub read %s --from %d --to %d", id, from, to)
	},
}

// flagNames are the CLI's words for the request arguments whose flag is not simply the
// argument's JSON name with dashes.
var flagNames = map[string]string{
	"workdir":           "--cwd",
	"timeout_ms":        "--timeout",
	"yield_time_ms":     "--yield",
	"tail_lines":        "--tail",
	"max_output_tokens": "--max-tokens",
	"keys":              "--key",
	"chars":             "TEXT",
	"cmd":               "-c",
	"argv":              "the program",
	"session_id":        "the session ID",
	"session_ids":       "the session IDs",
}

// flagName is the CLI's name of a request argument (by its JSON name): wait_for is
// --wait-for, workdir --cwd.
func flagName(arg string) string {
	if f, ok := flagNames[arg]; ok {
		return f
	}
	return "--" + strings.ReplaceAll(arg, "_", "-")
}

// printJSON prints v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printText prints s, ending it with a newline.
func printText(w io.Writer, s string) {
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(w, s)
}

// withClient dials the server and runs f with it.
func withClient(ctx context.Context, socket *target, cmd string, stderr io.Writer, f func(*server.Client) int) int {
	c, err := dial(ctx, socket, cmd, false, nil)
	if err != nil {
		return fail(stderr, cmd, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Close(cctx, true)
	}()
	return f(c)
}

// keysFlag collects repeated --key.
type keysFlag []string

func (k *keysFlag) String() string     { return strings.Join(*k, ",") }
func (k *keysFlag) Set(v string) error { *k = append(*k, v); return nil }

const writeHelp = `Usage:
  ptyhub write ID [TEXT] [--key KEY]... [--close-stdin] [--yield 250ms] [--json]

Types TEXT and then the named keys into session ID (its number, name, UUID or a unique
UUID prefix), then prints what the program printed since the last call, as the
write_stdin tool does. Into a session an agent started, it prints what followed this
input and leaves the agent's read position alone (the agent still gets that output, and
is told a human typed). TEXT is typed as it is: a shell passes "echo hi\n" as a backslash and an n, so end
a line with --key Enter (or $'echo hi\n' in bash). Keys are tmux-style names: Enter,
Tab, Escape, Up, C-c, C-d, M-x, F1... Without TEXT and keys it just polls.
`

func runWrite(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("write", writeHelp)
	var keys keysFlag
	fs.Var(&keys, "key", "a `key` to type after TEXT, e.g. Enter or C-c (repeatable)")
	closeStdin := fs.Bool("close-stdin", false, "send end-of-file after the input")
	yield := fs.Duration("yield", time.Duration(session.DefaultWriteYieldMs)*time.Millisecond, "how long to collect output (max 10m)")
	maxTokens := fs.Int64("max-tokens", 10_000, "token `budget` of the printed output")
	waitFor := fs.String("wait-for", "", "return as soon as the output matches this `regexp`")
	jsonOut := fs.Bool("json", false, "print the result as one JSON object")
	socket := serverFlags(fs)
	pos, code, done := fs.parseMixed(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) == 0 || len(pos) > 2 {
		return usageError(stderr, "write", "give a session ID and at most one TEXT")
	}
	req := session.WriteRequest{SessionID: pos[0], Keys: keys, CloseStdin: *closeStdin,
		MaxOutputTokens: maxTokens, WaitFor: *waitFor}
	if len(pos) == 2 {
		req.Chars = pos[1]
	}
	if fs.Lookup("yield").Value.String() != (time.Duration(session.DefaultWriteYieldMs) * time.Millisecond).String() {
		// Given: else the session's default, which is longer for a command line typed
		// into an integrated shell.
		yms := yield.Milliseconds()
		req.YieldTimeMs = &yms
	}
	return withClient(ctx, socket, "write", stderr, func(c *server.Client) int {
		res, err := c.Write(ctx, req)
		if err != nil {
			return fail(stderr, "write", err)
		}
		if *jsonOut {
			printJSON(stdout, res)
		} else {
			printText(stdout, res.TextIn(cliWords))
		}
		return 0
	})
}

const readHelp = `Usage:
  ptyhub read ID [--raw|--screen] [--tail N] [--from OFFSET] [-f]
  ptyhub read ID [--raw] [--from A] [--to B] [--max-tokens N] [--json]

Prints the output session ID has kept in memory (escape sequences removed; --raw for the
bytes as printed), without moving the agent's cursor. -f follows the output as it comes,
until the session ends or you press Ctrl-C.

With --to, --max-tokens or --json it reads as the read_output tool does: the raw byte
range [A, B), cut to N tokens (the result names the cut range: read it with --from and
--to), and --json prints the whole result.
`

func runRead(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("read", readHelp)
	raw := fs.Bool("raw", false, "print the bytes as printed, escape sequences included")
	screen := fs.Bool("screen", false, "print the current screen")
	tail := fs.Int("tail", 0, "print only the last `N` lines")
	from := fs.Int64("from", -1, "raw byte `offset` to read from")
	follow := fs.Bool("f", false, "follow: keep printing new output until the session ends")
	to := fs.Int64("to", -1, "raw byte `offset` to stop at")
	maxTokens := fs.Int64("max-tokens", 0, "cut the output to `N` tokens, as read_output does")
	jsonOut := fs.Bool("json", false, "print the result as JSON (the read_output tool's structured result)")
	socket := serverFlags(fs)
	pos, code, done := fs.parseArgs(args, 1, "give one session ID", stdout, stderr)
	if done {
		return code
	}
	if *screen {
		return screenOf(ctx, socket, "read", pos[0], stdout, stderr)
	}
	if *to >= 0 || *maxTokens > 0 || *jsonOut {
		if *follow {
			return usageError(stderr, "read", "-f does not go with --to, --max-tokens or --json")
		}
		req := session.ReadRequest{SessionID: pos[0], TailLines: *tail, View: "text"}
		if *raw {
			req.View = "raw"
		}
		if *from >= 0 {
			req.From = from
		}
		if *to >= 0 {
			req.To = to
		}
		if *maxTokens > 0 {
			req.MaxOutputTokens = maxTokens
		}
		return withClient(ctx, socket, "read", stderr, func(c *server.Client) int {
			res, err := c.Read(ctx, req)
			if err != nil {
				return fail(stderr, "read", err)
			}
			if *jsonOut {
				printJSON(stdout, res)
				return 0
			}
			io.WriteString(stdout, res.Output)
			if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
				io.WriteString(stdout, "\n")
			}
			for _, w := range res.Warnings {
				fmt.Fprintf(stderr, "ptyhub read: %s\n", w)
			}
			if r := res.TruncatedRange; r != nil {
				fmt.Fprintf(stderr, "ptyhub read: cut bytes %d to %d; read them with --from %d --to %d\n", r[0], r[1], r[0], r[1])
			}
			return 0
		})
	}
	return readOutput(ctx, "read", socket, pos[0], *raw, *tail, *from, *follow, stdout, stderr)
}

// readOutput prints a session's output (text or raw), and follows it when asked.
func readOutput(ctx context.Context, cmd string, socket *target, id string, raw bool, tail int, from int64, follow bool, stdout, stderr io.Writer) int {
	req := session.ReadRequest{SessionID: id, TailLines: tail, View: "text"}
	if raw {
		req.View = "raw"
	}
	if from >= 0 {
		req.From = &from
	}
	big := int64(250_000) // the largest budget: a human reads everything held
	req.MaxOutputTokens = &big
	var next int64
	var text string
	gone := false
	code := withClient(ctx, socket, cmd, stderr, func(c *server.Client) int {
		res, err := c.Read(ctx, req)
		if errors.Is(err, session.ErrNotFound) {
			gone = true
			return 0
		}
		if err != nil {
			return fail(stderr, cmd, err)
		}
		text, next = res.Output, res.NextOffset
		for _, w := range res.Warnings {
			fmt.Fprintf(stderr, "ptyhub %s: %s\n", cmd, w)
		}
		return 0
	})
	if code != 0 {
		return code
	}
	if gone {
		return readTranscript(ctx, cmd, socket, id, raw, tail, stdout, stderr)
	}
	io.WriteString(stdout, text)
	if !follow {
		if text != "" && !strings.HasSuffix(text, "\n") {
			io.WriteString(stdout, "\n")
		}
		return 0
	}
	o, err := socket.options(ctx, cmd, false)
	if err != nil {
		return fail(stderr, cmd, err)
	}
	a, err := server.DialAttach(ctx, o, server.AttachOptions{Session: id, Watch: true, From: &next})
	if err != nil {
		return fail(stderr, cmd, err)
	}
	// The closer: owned by this function; stops when it returns (stop is closed).
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			a.Close()
		case <-stop:
			a.Close()
		}
	}()
	var conv termtext.Converter
	var buf []byte
	for {
		data, ended, exit, err := a.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return 0
			}
			return fail(stderr, cmd, fmt.Errorf("%w: %v", server.ErrConnLost, err))
		}
		if raw {
			stdout.Write(data)
		} else {
			buf = conv.Write(buf[:0], data)
			if ended {
				buf = conv.Close(buf)
			}
			stdout.Write(buf)
		}
		if ended {
			if exit != "" {
				fmt.Fprintf(stderr, "ptyhub %s: session %s %s\n", cmd, a.Welcome.SessionID, exit)
			}
			return 0
		}
	}
}

const lsHelp = `Usage:
  ptyhub ls [--json]

Lists the sessions of the ptyhub server, as the list_sessions tool shows them to an
agent: ID, NAME, PID, STATE (running, running(input) when it waits for input,
exited(CODE), killed(SIGNAL), timed-out), AGE, QUIET (time since its last output), CPU
and RSS of its processes, the TCP PORTS they listen on, CLIENTS (attached terminals),
CWD (a shell's directory as its last prompt reported it, for a bash, zsh or fish with
shell integration; - for other programs), COMMAND and the last line of output.

IDs are never reused for you, also across server restarts. The server and each agent's
ptyhub mcp (which runs that agent's sessions) take ids in blocks of 64 from one counter
in the state directory, so ids jump by about 64 between processes: 3, 4, then 67 for
the first session of a new agent.
`

func runLs(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("ls", lsHelp)
	jsonOut := fs.Bool("json", false, "print the list as one JSON object")
	socket := serverFlags(fs)
	if code, done := fs.parseNoArgs(args, "takes no arguments", stdout, stderr); done {
		return code
	}
	return withClient(ctx, socket, "ls", stderr, func(c *server.Client) int {
		res, err := c.List(ctx)
		if err != nil {
			return fail(stderr, "ls", err)
		}
		if *jsonOut {
			printJSON(stdout, res)
			return 0
		}
		// The same table list_sessions gives the agent.
		printText(stdout, res.Text())
		return 0
	})
}

const killHelp = `Usage:
  ptyhub kill ID... [--signal SIG]
  ptyhub kill --all

Ends every process of each session ID (SIGHUP, SIGTERM, then SIGKILL after 2 s), or
with --signal sends only that signal (INT, TERM, KILL, HUP, QUIT, USR1...; INT goes to
the foreground process group, like Ctrl-C). --all ends every running session. The
sessions stay listed; 'ptyhub rm' forgets them.
`

func runKill(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("kill", killHelp)
	sig := fs.String("signal", "", "send only this `signal` instead of ending the session")
	all := fs.Bool("all", false, "every running session")
	socket := serverFlags(fs)
	pos, code, done := fs.parseMixed(args, stdout, stderr)
	if done {
		return code
	}
	if (len(pos) == 0) == !*all {
		return usageError(stderr, "kill", "give session IDs or --all")
	}
	return killOrRemove(ctx, "kill", socket, pos, *all, false, session.KillRequest{Signal: *sig}, stdout, stderr)
}

const rmHelp = `Usage:
  ptyhub rm ID...
  ptyhub rm --exited | --all

Ends every process of each session ID (if it still runs) and forgets it: it leaves
'ptyhub ls' and its output is readable only from its transcript ('ptyhub logs ID').
--exited forgets every session that has ended; --all every session.
`

func runRm(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("rm", rmHelp)
	all := fs.Bool("all", false, "every session")
	exited := fs.Bool("exited", false, "every session that has ended")
	socket := serverFlags(fs)
	pos, code, done := fs.parseMixed(args, stdout, stderr)
	if done {
		return code
	}
	if *all && *exited || (len(pos) == 0) == !(*all || *exited) {
		return usageError(stderr, "rm", "give session IDs, --exited or --all")
	}
	return killOrRemove(ctx, "rm", socket, pos, *all, *exited, session.KillRequest{Remove: true}, stdout, stderr)
}

// killOrRemove sends req for each id (or for every session, or every exited one,
// listed first), several at once over one connection, and prints the results in order.
// It returns 1 if any failed.
func killOrRemove(ctx context.Context, cmd string, socket *target, ids []string, all, exited bool, req session.KillRequest, stdout, stderr io.Writer) int {
	return withClient(ctx, socket, cmd, stderr, func(c *server.Client) int {
		if all || exited {
			l, err := c.List(ctx)
			if err != nil {
				return fail(stderr, cmd, err)
			}
			for _, in := range l.Sessions {
				running := in.State == session.StateRunning
				if exited && running || cmd == "kill" && !running {
					continue
				}
				ids = append(ids, in.SessionID)
			}
		}
		type outcome struct {
			res *session.KillResult
			err error
		}
		results := make([]outcome, len(ids))
		sem := make(chan struct{}, 64) // calls in flight at once
		var wg sync.WaitGroup
		for i, id := range ids {
			r := req
			r.SessionID = id
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				res, err := c.Kill(ctx, r)
				results[i] = outcome{res, err}
			})
		}
		wg.Wait()
		status := 0
		for _, o := range results {
			if o.err != nil {
				status = fail(stderr, cmd, o.err)
				continue
			}
			printText(stdout, o.res.Text())
		}
		return status
	})
}

const logsHelp = `Usage:
  ptyhub logs ID [-f] [--raw] [--cast]
  ptyhub logs --all

Prints everything session ID printed, from its transcript on disk
($XDG_STATE_HOME/ptyhub/sessions/UUID.cast), so output that has long left memory, and
sessions the server no longer knows (pruned, removed, or from before a restart), can
still be read. ID is the short number, the UUID or a unique UUID prefix.

The text view is the default (escape sequences removed, progress bars collapsed);
--raw prints the bytes as recorded ('less -R' shows the colours). Markers such as
[session ended: exited with code 0] and [N bytes of hidden input] are shown on lines of
their own. -f keeps printing until the session ends or you press Ctrl-C. --cast prints
the path of the asciicast file instead ('asciinema play $(ptyhub logs --cast 3)').
--all lists every transcript on disk.
`

func runLogs(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("logs", logsHelp)
	follow := fs.Bool("f", false, "follow: keep printing new output until the session ends")
	raw := fs.Bool("raw", false, "print the output as recorded, escape sequences included")
	fs.Bool("text", true, "the text view (the default; kept for compatibility)")
	cast := fs.Bool("cast", false, "print the path of the session's asciicast transcript")
	all := fs.Bool("all", false, "list every transcript on disk")
	socket := serverFlags(fs)
	pos, code, done := fs.parseMixed(args, stdout, stderr)
	if done {
		return code
	}
	if *all {
		if len(pos) != 0 {
			return usageError(stderr, "logs", "--all takes no session ID")
		}
		a, err := dialLogs(ctx, socket, server.LogsOptions{All: true})
		if err != nil {
			return fail(stderr, "logs", err)
		}
		a.Close()
		return listTranscripts(a.Welcome.Transcripts, stdout)
	}
	if len(pos) != 1 {
		return usageError(stderr, "logs", "give one session ID (or --all)")
	}
	// The server reads the transcript on its machine (this one, or --host's).
	a, err := dialLogs(ctx, socket, server.LogsOptions{ID: pos[0], PathOnly: *cast, Follow: *follow, Markers: true, Text: !*raw})
	if err != nil {
		return fail(stderr, "logs", noTranscript(err, pos[0]))
	}
	if *cast {
		a.Close()
		fmt.Fprintln(stdout, a.Welcome.Path)
		return 0
	}
	if err := copyLogs(ctx, a, stdout); err != nil {
		return fail(stderr, "logs", err)
	}
	return 0
}

// dialLogs asks the target's server for a transcript (see server.DialLogs).
func dialLogs(ctx context.Context, t *target, l server.LogsOptions) (*server.Attach, error) {
	o, err := t.options(ctx, "logs", true)
	if err != nil {
		return nil, err
	}
	return server.DialLogs(ctx, o, l)
}

// copyLogs copies a transcript stream to w until its end (nil), ctx's end (nil: the
// user pressed Ctrl-C during a follow) or a failure. It closes a.
func copyLogs(ctx context.Context, a *server.Attach, w io.Writer) error {
	stop := context.AfterFunc(ctx, func() { a.Close() })
	defer stop()
	defer a.Close()
	for {
		data, ended, _, err := a.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		w.Write(data)
		if ended {
			return nil
		}
	}
}

// noTranscript words a not-found error of a transcript lookup for the CLI: fail adds
// the hint to 'ptyhub ls', so this names only the other place to look. Other errors are
// returned as they are.
func noTranscript(err error, id string) error {
	if !errors.Is(err, session.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%w %s: no such session, and no transcript of it ('ptyhub logs --all' lists the transcripts)", session.ErrNotFound, id)
}

// readTranscript prints the output of a session the server no longer has (removed,
// pruned, or from before a restart) from its transcript on disk, found by short id, UUID
// or UUID prefix.
func readTranscript(ctx context.Context, cmd string, socket *target, id string, raw bool, tail int, stdout, stderr io.Writer) int {
	a, err := dialLogs(ctx, socket, server.LogsOptions{ID: id, Text: !raw})
	if err != nil {
		return fail(stderr, cmd, noTranscript(err, id))
	}
	var b strings.Builder
	if err := copyLogs(ctx, a, &b); err != nil {
		return fail(stderr, cmd, err)
	}
	text := b.String()
	if tail > 0 {
		lines := strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")
		text = strings.Join(lines[max(0, len(lines)-tail):], "") + "\n"
	}
	fmt.Fprintf(stderr, "ptyhub %s: session %s is no longer in the server (removed, pruned or from before a restart); this is its transcript\n", cmd, id)
	io.WriteString(stdout, text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		io.WriteString(stdout, "\n")
	}
	return 0
}

// listTranscripts prints one line per transcript on disk, oldest first.
func listTranscripts(infos []transcript.Info, stdout io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUUID\tSTARTED\tSIZE\tSTATE\tCOMMAND")
	for _, in := range infos {
		state := in.Ended
		switch {
		case in.Live:
			state = "recording"
		case state == "":
			state = "unfinished"
		}
		started := time.Unix(in.Header.Timestamp, 0).Format("2006-01-02 15:04:05")
		id := "-"
		if in.Header.SessionID > 0 {
			id = strconv.Itoa(in.Header.SessionID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", id, in.UUID, started, in.Size, state, in.Header.Command)
	}
	tw.Flush()
	return 0
}

const screenHelp = `Usage:
  ptyhub screen ID

Prints the current screen of session ID as a terminal shows it (for full-screen
programs such as top, vim or less).
`

func runScreen(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("screen", screenHelp)
	socket := serverFlags(fs)
	pos, code, done := fs.parseArgs(args, 1, "give one session ID", stdout, stderr)
	if done {
		return code
	}
	return screenOf(ctx, socket, "screen", pos[0], stdout, stderr)
}

func screenOf(ctx context.Context, socket *target, cmd, id string, stdout, stderr io.Writer) int {
	return withClient(ctx, socket, cmd, stderr, func(c *server.Client) int {
		res, err := c.Read(ctx, session.ReadRequest{SessionID: id, View: "screen"})
		if err != nil {
			return fail(stderr, cmd, err)
		}
		if res.Screen != nil {
			printText(stdout, strings.Join(res.Screen.Rows, "\n"))
		} else {
			printText(stdout, res.Output)
		}
		return 0
	})
}

const waitHelp = `Usage:
  ptyhub wait [ID|NAME]... [--until EVENT,...] [--wait-for RE] [--timeout 30s] [--json]

Blocks until the first of the sessions exits, waits for input, or prints output that
matches --wait-for, then prints that session's new output (as 'ptyhub write ID' would)
and one line on each other session. Without IDs it waits on every running session.
--until narrows the events: exit, waiting_for_input, pattern. Exits 0 when a session
had an event, 1 at the timeout.
`

func runWait(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("wait", waitHelp)
	until := fs.String("until", "", "comma-separated `events` that count: exit, waiting_for_input, pattern")
	waitFor := fs.String("wait-for", "", "return as soon as a session's output matches this `regexp`")
	timeout := fs.Duration("timeout", time.Duration(session.DefaultWaitTimeoutMs)*time.Millisecond, "how long to wait at most (max 10m)")
	maxTokens := fs.Int64("max-tokens", 10_000, "token `budget` of the printed output")
	jsonOut := fs.Bool("json", false, "print the result as one JSON object")
	socket := serverFlags(fs)
	pos, code, done := fs.parseMixed(args, stdout, stderr)
	if done {
		return code
	}
	tms := timeout.Milliseconds()
	req := session.WaitRequest{SessionIDs: pos, WaitFor: *waitFor, TimeoutMs: &tms, MaxOutputTokens: maxTokens}
	if *until != "" {
		req.Until = strings.Split(*until, ",")
	}
	return withClient(ctx, socket, "wait", stderr, func(c *server.Client) int {
		if len(req.SessionIDs) == 0 {
			// A CLI connection owns no sessions: wait on every running one.
			l, err := c.List(ctx)
			if err != nil {
				return fail(stderr, "wait", err)
			}
			for _, s := range l.Sessions {
				if s.State == session.StateRunning {
					req.SessionIDs = append(req.SessionIDs, s.SessionID)
				}
			}
			if len(req.SessionIDs) == 0 {
				fmt.Fprintln(stderr, "ptyhub wait: no running session to wait for")
				return exitError
			}
		}
		res, err := c.Wait(ctx, req)
		if err != nil {
			if se, ok := signalOf(ctx); ok {
				fmt.Fprintf(stderr, "ptyhub wait: %s; the sessions keep running\n", se)
				return se.exitCode()
			}
			return fail(stderr, "wait", err)
		}
		if *jsonOut {
			printJSON(stdout, res)
		} else {
			printText(stdout, res.TextIn(cliWords))
		}
		if res.SessionID == "" {
			return exitError
		}
		return 0
	})
}
