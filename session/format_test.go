package session

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestResultText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{
			name: "exited",
			r: Result{ChunkID: "5c1a9e", WallTimeMs: 42.1, SessionID: "1", State: StateExited,
				ExitCode: new(0), ReturnedBecause: BecauseExit, Output: "hi\n"},
			want: "Chunk ID: 5c1a9e\nWall time: 0.0421 seconds\nProcess exited with code 0\nOutput:\nhi\n",
		},
		{
			name: "running, deadline",
			r: Result{ChunkID: "a", WallTimeMs: 10000, SessionID: "3", State: StateRunning,
				ReturnedBecause: BecauseDeadline, Output: "building…"},
			want: "Chunk ID: a\nWall time: 10.0000 seconds\nProcess running with session ID 3\nOutput:\nbuilding…",
		},
		{
			name: "signal, core dumped",
			r: Result{ChunkID: "b", WallTimeMs: 1, SessionID: "2", State: StateExited,
				Signal: "SIGSEGV", CoreDumped: true, ReturnedBecause: BecauseExit},
			want: "Chunk ID: b\nWall time: 0.0010 seconds\nProcess killed by signal SIGSEGV (core dumped)\nOutput:\n",
		},
		{
			name: "timed out",
			r: Result{ChunkID: "c", WallTimeMs: 500, SessionID: "4", State: StateExited,
				ExitCode: new(124), Signal: "SIGTERM", TimedOut: true, ReturnedBecause: BecauseExit},
			want: "Chunk ID: c\nWall time: 0.5000 seconds\nProcess timed out and was killed (exit code 124)\nOutput:\n",
		},
		{
			name: "truncated",
			r: Result{ChunkID: "d", WallTimeMs: 3, SessionID: "7", State: StateExited, ExitCode: new(2),
				OriginalTokenCount: new(14873), TruncatedRange: &[2]int64{1200, 98000},
				ReturnedBecause: BecauseExit, Output: "head\n…14000 tokens truncated…\ntail\n"},
			want: "Chunk ID: d\nWall time: 0.0030 seconds\nProcess exited with code 2\nOriginal token count: 14873\n" +
				"Output truncated: raw bytes 1200 to 98000 were cut from the middle; read them with read_output (session_id 7, from 1200, to 98000)\n" +
				"Output:\nhead\n…14000 tokens truncated…\ntail\n",
		},
		{
			name: "waiting for input",
			r: Result{ChunkID: "e", WallTimeMs: 20, SessionID: "5", State: StateRunning,
				ReturnedBecause: BecauseWaitingForInput, Output: ">>> "},
			want: "Chunk ID: e\nWall time: 0.0200 seconds\nProcess running with session ID 5\nWaiting for input\nOutput:\n>>> ",
		},
		{
			name: "password prompt",
			r: Result{ChunkID: "f", WallTimeMs: 20, SessionID: "5", State: StateRunning, PasswordPrompt: true,
				ReturnedBecause: BecauseWaitingForInput, Output: "Password: "},
			want: "Chunk ID: f\nWall time: 0.0200 seconds\nProcess running with session ID 5\nWaiting for input (password prompt)\nOutput:\nPassword: ",
		},
		{
			name: "echo off at deadline",
			r: Result{ChunkID: "f", WallTimeMs: 250, SessionID: "5", State: StateRunning, PasswordPrompt: true,
				ReturnedBecause: BecauseDeadline},
			want: "Chunk ID: f\nWall time: 0.2500 seconds\nProcess running with session ID 5\nTerminal echo is off (password prompt)\nOutput:\n",
		},
		{
			name: "pattern",
			r: Result{ChunkID: "g", WallTimeMs: 5, SessionID: "6", State: StateRunning,
				ReturnedBecause: BecausePattern, Output: "42\n"},
			want: "Chunk ID: g\nWall time: 0.0050 seconds\nProcess running with session ID 6\nReturned because the output matched the pattern\nOutput:\n42\n",
		},
		{
			name: "cancelled",
			r: Result{ChunkID: "h", WallTimeMs: 5, SessionID: "6", State: StateRunning,
				ReturnedBecause: BecauseCancelled},
			want: "Chunk ID: h\nWall time: 0.0050 seconds\nProcess running with session ID 6\nCall cancelled before its yield window ended; the process keeps running\nOutput:\n",
		},
		{
			name: "notices",
			r: Result{ChunkID: "i", WallTimeMs: 1, SessionID: "9", State: StateRunning, ReturnedBecause: BecauseDeadline,
				HumanInputBytes: 12, QueuedBytes: 1, MissedBytes: 4096,
				Survivors: []Survivor{{PID: 4242, Command: "sleep 100"}, {PID: 4243, Command: "python3\n-c x"}},
				Notices: Notices{
					EndedSinceLastCall: []Ended{
						{SessionID: "4", Command: "make test", ExitCode: new(2)},
						{SessionID: "5", Command: "npm run dev", Signal: "SIGTERM"},
						{SessionID: "8", Command: "sleep 9", ExitCode: new(124), TimedOut: true},
					},
					Warnings: []string{"yield_time_ms 900000 clamped to 600000", "60 of 64 sessions in use"},
				}},
			want: "Chunk ID: i\nWall time: 0.0010 seconds\nProcess running with session ID 9\n" +
				"A human typed 12 bytes into this session since your previous call\n" +
				"1 byte of input still queued: the program is not reading its input yet\n" +
				"4096 bytes of output left memory before this call could read them\n" +
				"Processes that outlived the session's main process were killed: 4242 sleep 100, 4243 python3 -c x\n" +
				"Session 4 (make test) ended: exit code 2\n" +
				"Session 5 (npm run dev) ended: killed by signal SIGTERM\n" +
				"Session 8 (sleep 9) ended: timed out (exit code 124)\n" +
				"Warning: yield_time_ms 900000 clamped to 600000\n" +
				"Warning: 60 of 64 sessions in use\n" +
				"Output:\n",
		},
		{
			name: "screen",
			r: Result{ChunkID: "j", SessionID: "2", State: StateRunning, ReturnedBecause: BecauseRead,
				Screen: &Screen{Rows: []string{"top - 10:00", "", "PID USER"}, CursorRow: 1, CursorCol: 0, AltScreen: true}},
			want: "Chunk ID: j\nWall time: 0.0000 seconds\nProcess running with session ID 2\n" +
				"Screen: 3 rows, cursor at row 2 column 1, alternate screen\nOutput:\ntop - 10:00\n\nPID USER",
		},
		{
			name: "no chunk id, no exit status",
			r:    Result{SessionID: "2", State: StateExited, ReturnedBecause: BecauseRead, Output: "x"},
			want: "Wall time: 0.0000 seconds\nProcess exited\nOutput:\nx",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.r.Text(); got != tt.want {
				t.Errorf("Text():\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestListResultText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		l    ListResult
		want string
	}{
		{name: "empty", l: ListResult{}, want: "No sessions."},
		{
			name: "table",
			l: ListResult{Sessions: []Info{
				{SessionID: "1", Name: "dev", PID: 100, State: StateRunning, AgeMs: 65_000, Clients: 1, Command: "bash", LastLine: "$ ",
					WaitingForInput: true, LastOutputAgoMs: new(int64(3_000)), CPUMs: 1_500, RSSBytes: 12 << 20, Ports: []int{3000, 8080},
					Shell: &ShellState{Cwd: "/src/app", LastCommand: "make test", LastExitCode: new(2)}},
				{SessionID: "2", PID: 101, State: StateRunning, AgeMs: 1_000, Command: "zsh", LastLine: "x",
					Shell: &ShellState{Cwd: "/tmp", Command: "sleep 9", RunningMs: new(int64(900))}},
				{SessionID: "12", PID: 20345, State: StateExited, ExitCode: new(0), AgeMs: 3_700_000, Command: "make\ttest",
					LastLine: "ok  \x1b[32mgithub.com/x\x1b[0m"},
				{SessionID: "13", PID: 7, State: StateExited, Signal: "SIGKILL", AgeMs: 500, Command: "sleep 100"},
				{SessionID: "14", PID: 8, State: StateExited, ExitCode: new(124), TimedOut: true, AgeMs: 90_000_000,
					Command: strings.Repeat("x", 50)},
			}, Notices: Notices{Warnings: []string{"60 of 64 sessions in use"}}},
			want: "" +
				"ID NAME PID STATE AGE QUIET CPU RSS PORTS CLIENTS CWD COMMAND LAST-LINE\n" +
				"1 dev 100 running(input) 1m05s 3s 1.5s 12M 3000,8080 1 /src/app bash (last: make test → 2) $\n" +
				"2 - 101 running 1s - 0.0s - - 0 /tmp zsh: sleep 9 x\n" +
				"12 - 20345 exited(0) 1h01m - - - - 0 - make test ok  github.com/x\n" +
				"13 - 7 killed(SIGKILL) 0s - - - - 0 - sleep 100\n" +
				"14 - 8 timed-out 1d01h - - - - 0 - " + strings.Repeat("x", 40) + "…\n" +
				"Warning: 60 of 64 sessions in use",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.l.Text()
			// Compare cell contents, not exact padding: tabwriter owns the layout.
			if normalize(got) != normalize(tt.want) {
				t.Errorf("Text():\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// normalize collapses runs of spaces so table tests check cells, not column widths.
func normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestListResultTextAligned(t *testing.T) {
	t.Parallel()
	l := ListResult{Sessions: []Info{
		{SessionID: "1", PID: 100, State: StateRunning, Command: "bash"},
		{SessionID: "123", PID: 1, State: StateRunning, Command: "python3 -q"},
	}}
	lines := strings.Split(l.Text(), "\n")
	if len(lines) != 3 {
		t.Fatalf("want header + 2 rows, got %q", lines)
	}
	col := strings.Index(lines[0], "COMMAND")
	for _, l := range lines[1:] {
		if len(l) < col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("COMMAND column not aligned at %d in %q", col, l)
		}
	}
}

func TestKillResultText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		k    KillResult
		want string
	}{
		{
			name: "ended",
			k:    KillResult{SessionID: "3", State: StateExited, Signal: "SIGHUP"},
			want: "Session 3 ended: killed by signal SIGHUP",
		},
		{
			name: "ended with code, survivors, removed",
			k: KillResult{SessionID: "3", State: StateExited, ExitCode: new(0), Removed: true,
				Survivors: []Survivor{{PID: 9, Command: "sleep 60"}}},
			want: "Session 3 ended: exit code 0\n" +
				"Processes that outlived the session's main process were killed: 9 sleep 60\n" +
				"Session 3 removed; its transcript stays on disk",
		},
		{
			name: "signal, still running",
			k:    KillResult{SessionID: "4", State: StateRunning, SignalSent: "SIGINT"},
			want: "Sent SIGINT to session 4; it is still running",
		},
		{
			name: "signal, ended",
			k:    KillResult{SessionID: "4", State: StateExited, SignalSent: "SIGTERM", Signal: "SIGTERM"},
			want: "Sent SIGTERM to session 4; it ended: killed by signal SIGTERM",
		},
		{
			name: "notices",
			k: KillResult{SessionID: "4", State: StateExited, ExitCode: new(1),
				Notices: Notices{EndedSinceLastCall: []Ended{{SessionID: "2", Command: "true", ExitCode: new(0)}}}},
			want: "Session 4 ended: exit code 1\nSession 2 (true) ended: exit code 0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.k.Text(); got != tt.want {
				t.Errorf("Text():\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestResizeResultText(t *testing.T) {
	t.Parallel()
	r := ResizeResult{SessionID: "2", Rows: 40, Cols: 120, Notices: Notices{Warnings: []string{"w"}}}
	want := "Session 2 resized to 40 rows x 120 columns\nWarning: w"
	if got := r.Text(); got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
}

func TestAge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{0, "0s"},
		{59 * time.Second, "59s"},
		{time.Minute + 5*time.Second, "1m05s"},
		{time.Hour + 2*time.Minute + 30*time.Second, "1h02m"},
		{49 * time.Hour, "2d01h"},
	}
	for _, tt := range tests {
		if got := Age(tt.d); got != tt.want {
			t.Errorf("Age(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"a\nb\tc\r", 10, "a b c"},
		{"\x1b[31mred\x1b[0m\x1b]0;title\x07", 20, "red"},
		{"abcdef", 3, "abc…"},
		{"€€€€", 2, "€€…"},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in, tt.max); got != tt.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// Each interface points to its own operations: a result's text in the CLI's words names
// the CLI's command to read the cut range, never the MCP tool.
func TestTextInWords(t *testing.T) {
	t.Parallel()
	words := Words{ReadRange: func(id string, from, to int64) string {
		return fmt.Sprintf("ptyhub read %s --from %d --to %d", id, from, to)
	}}
	r := Result{SessionID: "7", State: StateExited, ExitCode: new(2), OriginalTokenCount: new(14873),
		TruncatedRange: &[2]int64{1200, 98000}, ReturnedBecause: BecauseExit, Output: "head\n…\ntail\n"}
	w := WaitResult{Result: r, Others: []SessionLine{}}
	for name, text := range map[string]string{"result": r.TextIn(words), "wait result": w.TextIn(words)} {
		if !strings.Contains(text, "read them with ptyhub read 7 --from 1200 --to 98000\n") || strings.Contains(text, "read_output") {
			t.Errorf("%s in the CLI's words:\n%s", name, text)
		}
	}
	if text := r.Text(); !strings.Contains(text, "read them with read_output (session_id 7, from 1200, to 98000)\n") {
		t.Errorf("Text is not in the MCP tools' words:\n%s", text)
	}
}
