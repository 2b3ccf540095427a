package session

import (
	"context"
	"errors"
)

// Service is what the MCP layer and the CLI talk to. The in-process Client and the
// server's socket client (a later issue) both satisfy it, so callers do not care which
// they have. Every method is safe for concurrent use.
//
// Errors that come from bad arguments wrap ErrInvalid (a caller such as the MCP layer
// turns them into tool errors a model can act on); errors about the session wrap
// ErrNotFound or ErrExited.
type Service interface {
	// Exec starts a session and collects its output for the yield window.
	Exec(ctx context.Context, req ExecRequest) (*Result, error)
	// Write types into a session, then collects. Empty input polls.
	Write(ctx context.Context, req WriteRequest) (*Result, error)
	// Read re-reads output without moving the agent cursor.
	Read(ctx context.Context, req ReadRequest) (*Result, error)
	// List describes every session of the manager.
	List(ctx context.Context) (*ListResult, error)
	// Kill ends a session's processes (or sends one signal) and optionally forgets it.
	Kill(ctx context.Context, req KillRequest) (*KillResult, error)
	// Resize changes a session's window size (the program gets SIGWINCH).
	Resize(ctx context.Context, req ResizeRequest) (*ResizeResult, error)
	// Wait blocks until the first of some sessions exits, waits for input or matches a
	// pattern, and returns that session's new output (wait.go).
	Wait(ctx context.Context, req WaitRequest) (*WaitResult, error)
	// Watch blocks until sessions start, end or are removed, or one of some sessions
	// starts waiting for input (watch.go). It consumes no output.
	Watch(ctx context.Context, req WatchRequest) (*WatchResult, error)
}

var (
	// ErrInvalid marks a bad argument.
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound marks an unknown (or removed) session id.
	ErrNotFound = errors.New("unknown session")
	// ErrExited marks an operation that needs a running session.
	ErrExited = errors.New("session has exited")
	// ErrLimit marks the session limit being reached with nothing prunable.
	ErrLimit = errors.New("session limit reached")
)

// Defaults and limits of the tool interface.
const (
	DefaultExecYieldMs  = 10_000
	DefaultWriteYieldMs = 250
	MaxYieldMs          = 600_000
	DefaultRows         = 24
	DefaultCols         = 80
	MaxRows             = 1000
	MaxCols             = 1000
	// MaxInputBytes caps one write: larger payloads belong in a file.
	MaxInputBytes = 1 << 20
	// MaxCanonLine is the kernel's canonical-mode line limit (N_TTY_BUF_SIZE-1).
	MaxCanonLine = 4095
)

// ExecRequest is the input of exec_command. Exactly one of Cmd and Argv is set.
type ExecRequest struct {
	Cmd             string            `json:"cmd,omitempty" jsonschema:"shell command line, run as $SHELL -c CMD (give cmd or argv, not both)"`
	Argv            []string          `json:"argv,omitempty" jsonschema:"program and arguments, executed directly and resolved on PATH (instead of cmd)"`
	Workdir         string            `json:"workdir,omitempty" jsonschema:"working directory, absolute or relative to the directory the agent started ptyhub in (the default); must exist"`
	Shell           string            `json:"shell,omitempty" jsonschema:"shell used for cmd (default $SHELL, else /bin/bash, else /bin/sh)"`
	Login           bool              `json:"login,omitempty" jsonschema:"run cmd in a login shell (-lc); slower, default false"`
	TTY             *bool             `json:"tty,omitempty" jsonschema:"run on a pseudo-terminal (default true); false uses plain pipes with stdout and stderr merged"`
	Env             map[string]string `json:"env,omitempty" jsonschema:"environment variables merged over the inherited environment"`
	ClearEnv        bool              `json:"clear_env,omitempty" jsonschema:"start from an empty environment instead of the inherited one"`
	Stdin           string            `json:"stdin,omitempty" jsonschema:"text written to the program right after it starts"`
	CloseStdin      bool              `json:"close_stdin,omitempty" jsonschema:"send end-of-file after stdin"`
	Rows            int               `json:"rows,omitempty" jsonschema:"terminal rows (default 24)"`
	Cols            int               `json:"cols,omitempty" jsonschema:"terminal columns (default 80)"`
	YieldTimeMs     *int64            `json:"yield_time_ms,omitempty" jsonschema:"how long to wait for output before returning, in ms (default 10000, max 600000); returns earlier when the program exits or matches wait_for"`
	MaxOutputTokens *int64            `json:"max_output_tokens,omitempty" jsonschema:"token budget of the returned output (default 10000); longer output keeps its head and tail"`
	WaitFor         string            `json:"wait_for,omitempty" jsonschema:"regular expression (Go RE2 syntax) matched per line of new output, as grep does (^ and $ match at the line's start and end; the unfinished last line counts too): return as soon as a line matches; the terminal's echo of the call's own input is not matched"`
	TimeoutMs       int64             `json:"timeout_ms,omitempty" jsonschema:"hard time limit in ms: the session is killed at the limit and reported as timed out (exit code 124)"`
	Profile         string            `json:"profile,omitempty" jsonschema:"environment profile: agent (default: TERM=xterm-256color, NO_COLOR=1, no cargo progress bar, pagers off, UTF-8 locale) or plain"`
	Name            string            `json:"name,omitempty" jsonschema:"name of the session, usable wherever a session id goes; if a session of yours with this name is still running, it is returned (with its new output) instead of starting a duplicate"`
	// ShellIntegration: nil or true adds shell integration to an interactive bash, zsh
	// or fish (shell.go).
	ShellIntegration *bool `json:"shell_integration,omitempty" jsonschema:"when the command starts an interactive bash, zsh or fish (cmd or argv bash, zsh, fish, optionally with -i), add shell integration (default true): each command line typed into it then returns when that command ends, with only its output and a shell object (command, exit_code, cwd, duration_ms); false starts the shell as it is"`
	// Host is routed by the client side (package remote); a session manager refuses it.
	Host string `json:"host,omitempty" jsonschema:"run on another machine: a name from the user's ptyhub hosts.json, or ssh://[user@]host[:port], docker://CONTAINER, kube://[NAMESPACE/]POD[/CONTAINER]. The session starts in the remote user's home directory (or workdir, resolved there) with the remote environment plus env; its id reads HOST:ID"`
}

// WriteRequest is the input of write_stdin.
type WriteRequest struct {
	SessionID       string   `json:"session_id" jsonschema:"session id: the short number, the UUID, or a unique UUID prefix"`
	Chars           string   `json:"chars,omitempty" jsonschema:"bytes to type; JSON escapes carry control keys: \\u0003 is Ctrl-C, \\u0004 Ctrl-D, \\u001b[A Up; end a line with \\n"`
	Keys            []string `json:"keys,omitempty" jsonschema:"tmux-style key names typed after chars, e.g. C-c, Enter, Up, Tab, Escape, F1, BSpace, KP5; cursor and keypad keys follow the modes the program set (Up is ESC O A in cursor-key mode)"`
	CloseStdin      bool     `json:"close_stdin,omitempty" jsonschema:"send end-of-file after the input (Ctrl-D on a terminal, close of the pipe otherwise)"`
	YieldTimeMs     *int64   `json:"yield_time_ms,omitempty" jsonschema:"how long to wait for output, in ms (default 250, max 600000); 0 returns what is there now"`
	MaxOutputTokens *int64   `json:"max_output_tokens,omitempty" jsonschema:"token budget of the returned output (default 10000)"`
	WaitFor         string   `json:"wait_for,omitempty" jsonschema:"regular expression (Go RE2 syntax) matched per line of new output, as grep does (^ and $ at the line's start and end; the unfinished last line, e.g. a prompt, counts too); the terminal's echo of the chars you typed is never matched, only what the program printed"`
}

// ReadRequest is the input of read_output.
type ReadRequest struct {
	SessionID       string `json:"session_id" jsonschema:"session id: the short number, the UUID, or a unique UUID prefix"`
	View            string `json:"view,omitempty" jsonschema:"text (default: escapes removed, progress bars collapsed), raw (bytes as printed) or screen (the terminal screen as a human sees it)"`
	From            *int64 `json:"from,omitempty" jsonschema:"raw byte offset to read from (default: the start of what is kept, or see tail_lines)"`
	To              *int64 `json:"to,omitempty" jsonschema:"raw byte offset to stop at (default: the end)"`
	TailLines       int    `json:"tail_lines,omitempty" jsonschema:"return only the last N lines"`
	MaxOutputTokens *int64 `json:"max_output_tokens,omitempty" jsonschema:"token budget of the returned output (default 10000)"`
}

// KillRequest is the input of kill_session.
type KillRequest struct {
	SessionID string `json:"session_id" jsonschema:"session id: the short number, the UUID, or a unique UUID prefix"`
	Signal    string `json:"signal,omitempty" jsonschema:"send only this signal (INT, TERM, KILL, HUP, QUIT, USR1, ...) instead of ending every process of the session; INT goes to the foreground process group"`
	Remove    bool   `json:"remove,omitempty" jsonschema:"forget the session after ending it: it leaves list_sessions (its transcript stays on disk)"`
}

// ResizeRequest is the input of resize_session.
type ResizeRequest struct {
	SessionID string `json:"session_id" jsonschema:"session id: the short number, the UUID, or a unique UUID prefix"`
	Rows      int    `json:"rows" jsonschema:"terminal rows, 1 to 1000"`
	Cols      int    `json:"cols" jsonschema:"terminal columns, 1 to 1000"`
}

// Ended names a session that ended (listed once in ended_since_last_call).
type Ended struct {
	SessionID string `json:"session_id"`
	Command   string `json:"command"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	Signal    string `json:"signal,omitempty"`
	TimedOut  bool   `json:"timed_out,omitempty"`
	// Pruned: ended by ptyhub because its client reached its limit of running sessions.
	Pruned bool `json:"pruned,omitempty"`
	// Completion: its log, output counts and times (completion.go).
	*Completion
}

// Survivor is a process of a session that outlived its leader and was killed.
type Survivor struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

// Notices are carried by every result: what the caller should learn without asking.
type Notices struct {
	EndedSinceLastCall []Ended  `json:"ended_since_last_call"`
	Warnings           []string `json:"warnings"`
}

// AddWarning appends w to the warnings.
func (n *Notices) AddWarning(w string) { n.Warnings = append(n.Warnings, w) }

// Returned-because values of Result.ReturnedBecause.
const (
	BecauseExit            = "exit"
	BecauseWaitingForInput = "waiting_for_input"
	BecausePattern         = "pattern"
	BecauseDeadline        = "deadline"
	BecauseCancelled       = "cancelled"
	BecauseRead            = "read" // read_output: no waiting involved
	// BecauseNoSessions: wait_sessions without ids found nothing to wait on (none of
	// the client's sessions runs, and every exit has been reported to it).
	BecauseNoSessions = "no_sessions"
)

// States of a session.
const (
	StateRunning = "running"
	StateExited  = "exited"
)

// Result is what exec_command, write_stdin and read_output return: the MCP tools'
// structuredContent, also printed by `ptyhub exec --json`.
type Result struct {
	SessionID  string `json:"session_id"`
	UUID       string `json:"uuid"`
	State      string `json:"state"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	Signal     string `json:"signal,omitempty"`
	CoreDumped bool   `json:"core_dumped,omitempty"`
	TimedOut   bool   `json:"timed_out"`
	// Pruned: ptyhub ended the session at its client's limit of running sessions.
	Pruned             bool      `json:"pruned,omitempty"`
	ReturnedBecause    string    `json:"returned_because"`
	WallTimeMs         float64   `json:"wall_time_ms"`
	Output             string    `json:"output"`
	OriginalTokenCount *int      `json:"original_token_count,omitempty"`
	TruncatedRange     *[2]int64 `json:"truncated_range,omitempty"`
	NextOffset         int64     `json:"next_offset"`
	PasswordPrompt     bool      `json:"password_prompt"`
	HumanInputBytes    int64     `json:"human_input_bytes"`
	// OutputStopped: a ^S (XOFF) was typed while the terminal has flow control on, so the
	// terminal shows no output until a ^Q (XON). Only profile "plain" starts with flow
	// control on.
	OutputStopped bool       `json:"output_stopped,omitempty"`
	Survivors     []Survivor `json:"survivors,omitempty"`
	// SurvivorsMore counts the survivors past the first MaxSurvivorsListed, not listed.
	SurvivorsMore int `json:"survivors_more,omitempty"`
	// DurationMs is how long the program ran, once it has exited.
	DurationMs float64 `json:"duration_ms,omitempty"`
	// MissedBytes counts output that left memory before this call could read it.
	MissedBytes int64 `json:"missed_bytes,omitempty"`
	// QueuedBytes counts input bytes of this call not yet written to the program.
	QueuedBytes int `json:"queued_bytes,omitempty"`
	// ChunkID identifies this result (the Codex text body's "Chunk ID").
	ChunkID string `json:"chunk_id"`
	// Profile is the environment profile the session was started with (exec only).
	Profile string `json:"profile,omitempty"`
	// WaitDetection says how waiting_for_input was decided (see docs/design.md): "tty_read"
	// (blocked in read(2) on the terminal), "tty_poll" (blocked in select/poll/epoll on
	// the terminal, with no timeout that will end by itself and no working child on its
	// other fds), "quiet" (the kernel could not tell: the terminal is waited on together
	// with sockets, /proc was unreadable, or the platform has only the heuristic; fired
	// after output was quiet for a while) or "shell" (an integrated shell's prompt mark:
	// exact on every platform). Set only with returned_because "waiting_for_input".
	WaitDetection string `json:"wait_detection,omitempty"`
	// Shell describes the command of an integrated shell this call saw end (or still
	// running when it returned); Output is then that command's output only (shell.go).
	Shell *ShellCommand `json:"shell,omitempty" jsonschema:"set when the session is a bash, zsh or fish with shell integration and a command line ran in this call: the output is then that command's output only (no echoed command line, no prompt)"`
	// Screen is set for view "screen" (a later issue).
	Screen *Screen `json:"screen,omitempty"`
	// Name is the session's name, if it was started with one.
	Name string `json:"name,omitempty"`
	// Existing: exec_command named a session that was already running and returned it
	// instead of starting the command.
	Existing bool `json:"existing,omitempty"`
	// Completion is set once the session has exited (completion.go).
	*Completion
	Notices
}

// Screen is the rendered terminal screen of a session.
type Screen struct {
	Rows      []string `json:"rows"`
	CursorRow int      `json:"cursor_row"`
	CursorCol int      `json:"cursor_col"`
	AltScreen bool     `json:"alt_screen"`
}

// Info describes one session in a listing.
type Info struct {
	SessionID  string  `json:"session_id"`
	Name       string  `json:"name,omitempty"`
	UUID       string  `json:"uuid"`
	Command    string  `json:"command"`
	State      string  `json:"state"`
	PID        int     `json:"pid"`
	AgeMs      int64   `json:"age_ms"`
	ExitCode   *int    `json:"exit_code,omitempty"`
	Signal     string  `json:"signal,omitempty"`
	TimedOut   bool    `json:"timed_out,omitempty"`
	Pruned     bool    `json:"pruned,omitempty"`
	Clients    int     `json:"clients"`
	LastLine   string  `json:"last_line"`
	Owner      string  `json:"owner,omitempty"`
	Rows       int     `json:"rows"`
	Cols       int     `json:"cols"`
	TTY        bool    `json:"tty"`
	OutputSize int64   `json:"output_bytes"`
	IdleMs     float64 `json:"idle_ms"`
	// OutputStopped: see Result.OutputStopped.
	OutputStopped bool `json:"output_stopped,omitempty"`
	// Facts of a running session's processes (the leader and every other process of
	// the session): TCP ports they listen on, CPU time, resident memory.
	Ports    []int `json:"ports,omitempty"`
	CPUMs    int64 `json:"cpu_ms,omitempty"`
	RSSBytes int64 `json:"rss_bytes,omitempty"`
	// LastOutputAgoMs is the time since the program last printed (absent: never).
	LastOutputAgoMs *int64 `json:"last_output_ago_ms,omitempty"`
	// WaitingForInput: the program in the foreground waits for terminal input.
	WaitingForInput bool `json:"waiting_for_input,omitempty"`
	// Shell is an integrated shell's state (shell.go).
	Shell *ShellState `json:"shell,omitempty" jsonschema:"the state of a bash, zsh or fish with shell integration"`
	// PasswordPrompt: the terminal has echo off in canonical mode (a password prompt);
	// what a person types there never reaches the output or the transcript.
	PasswordPrompt bool `json:"password_prompt,omitempty"`
	// NeedsHuman: an agent asked for a person here (ask_human) and waits; HumanMessage is
	// what it asked them to do.
	NeedsHuman   bool   `json:"needs_human,omitempty"`
	HumanMessage string `json:"human_message,omitempty"`
	// Completion is set once the session has exited (completion.go); its output_bytes
	// is OutputSize.
	*Completion
}

// ListResult is what list_sessions returns.
type ListResult struct {
	Sessions []Info `json:"sessions"`
	Notices
}

// KillResult is what kill_session returns.
type KillResult struct {
	SessionID  string     `json:"session_id"`
	State      string     `json:"state"`
	ExitCode   *int       `json:"exit_code,omitempty"`
	Signal     string     `json:"signal,omitempty"`
	SignalSent string     `json:"signal_sent,omitempty"`
	Survivors  []Survivor `json:"survivors,omitempty"`
	// SurvivorsMore: see Result.SurvivorsMore.
	SurvivorsMore int  `json:"survivors_more,omitempty"`
	Removed       bool `json:"removed"`
	// AlreadyEnded: the session had ended before this call; the call did not end it.
	AlreadyEnded bool `json:"already_ended,omitempty"`
	Notices
}

// ResizeResult is what resize_session returns.
type ResizeResult struct {
	SessionID string `json:"session_id"`
	Rows      int    `json:"rows"`
	Cols      int    `json:"cols"`
	Notices
}
