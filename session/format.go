package session

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// This file renders results as the text a model (or a human at `ptyhub exec`) reads. The
// layout of Result.Text follows Codex's exec_command/write_stdin tool output, so models
// trained on it read ours without instruction:
//
//	Chunk ID: 5c1a9e
//	Wall time: 0.0421 seconds
//	Process exited with code 0
//	Original token count: 14873
//	Output:
//	…
//
// ptyhub's extra facts (why the call returned, notices, warnings) are short lines between
// the header and "Output:", so the output stays last and nothing is lost in it.

// Words are one interface's names for what the text of a result tells its reader to do
// next. The engine's texts take them, so each interface points to its own operations:
// the MCP tools to read_output, the CLI to ptyhub read.
type Words struct {
	// ReadRange says how to read raw bytes [from, to) of session id.
	ReadRange func(id string, from, to int64) string
}

// ToolWords are the MCP tools' words, the ones Text uses.
var ToolWords = Words{
	ReadRange: func(id string, from, to int64) string {
		return fmt.Sprintf("read_output (session_id %s, from %d, to %d)", id, from, to)
	},
}

// Text returns the text body of an exec_command, write_stdin or read_output result, in
// the MCP tools' words.
func (r *Result) Text() string { return r.TextIn(ToolWords) }

// TextIn is Text in an interface's words.
func (r *Result) TextIn(w Words) string {
	var b strings.Builder
	if r.ChunkID != "" {
		fmt.Fprintf(&b, "Chunk ID: %s\n", r.ChunkID)
	}
	fmt.Fprintf(&b, "Wall time: %.4f seconds\n", r.WallTimeMs/1000)
	b.WriteString(r.processLine())
	b.WriteByte('\n')
	if r.Shell != nil {
		b.WriteString(r.Shell.text())
		b.WriteByte('\n')
	}
	if r.OriginalTokenCount != nil {
		fmt.Fprintf(&b, "Original token count: %d\n", *r.OriginalTokenCount)
	}
	if r.TruncatedRange != nil {
		from, to := r.TruncatedRange[0], r.TruncatedRange[1]
		fmt.Fprintf(&b, "Output truncated: raw bytes %d to %d were cut from the middle; read them with %s\n",
			from, to, w.ReadRange(r.SessionID, from, to))
	}
	switch r.ReturnedBecause {
	case BecauseWaitingForInput:
		if r.PasswordPrompt {
			b.WriteString("Waiting for input (password prompt)\n")
		} else if r.WaitDetection == WaitShell {
			b.WriteString("Waiting for input at the shell's prompt\n")
		} else {
			b.WriteString("Waiting for input\n")
		}
	case BecausePattern:
		b.WriteString("Returned because the output matched the pattern\n")
	case BecauseCancelled:
		if r.State == StateRunning {
			b.WriteString("Call cancelled before its yield window ended; the process keeps running\n")
		} else {
			b.WriteString("Call cancelled before its yield window ended\n")
		}
	default:
		if r.PasswordPrompt && r.State == StateRunning {
			// Echo is off but the call returned for another reason: still worth knowing
			// before typing anything.
			b.WriteString("Terminal echo is off (password prompt)\n")
		}
	}
	if r.HumanInputBytes > 0 {
		fmt.Fprintf(&b, "A human typed %s into this session since your previous call\n", plural(r.HumanInputBytes, "byte"))
	}
	if r.QueuedBytes > 0 {
		fmt.Fprintf(&b, "%s of input still queued: the program is not reading its input yet\n", plural(int64(r.QueuedBytes), "byte"))
	}
	if r.MissedBytes > 0 {
		fmt.Fprintf(&b, "%s of output left memory before this call could read them\n", plural(r.MissedBytes, "byte"))
	}
	if c := r.Completion; c != nil && c.LogPath != "" {
		fmt.Fprintf(&b, "Full output log: %s (%s, %s)\n", c.LogPath, plural(c.OutputLines, "line"), plural(c.OutputBytes, "byte"))
	}
	if len(r.Survivors) > 0 {
		fmt.Fprintf(&b, "Processes that outlived the session's main process were killed: %s\n", survivorList(r.Survivors, r.SurvivorsMore))
	}
	r.Notices.writeText(&b)
	if r.Screen != nil {
		s := r.Screen
		alt := ""
		if s.AltScreen {
			alt = ", alternate screen"
		}
		fmt.Fprintf(&b, "Screen: %s, cursor at row %d column %d%s\n", plural(int64(len(s.Rows)), "row"), s.CursorRow+1, s.CursorCol+1, alt)
	}
	b.WriteString("Output:\n")
	out := r.Output
	if out == "" && r.Screen != nil {
		out = strings.Join(r.Screen.Rows, "\n")
	}
	b.WriteString(out)
	return b.String()
}

// processLine is the Codex status line: how the process stands after this call.
func (r *Result) processLine() string {
	var s string
	switch {
	case r.State == StateRunning:
		return "Process running with session ID " + r.SessionID
	case r.Pruned:
		s = "Process ended by ptyhub (pruned at the limit of running sessions"
		if r.Signal != "" {
			s += ", " + r.Signal
		}
		s += ")"
	case r.TimedOut:
		s = "Process timed out and was killed"
		if r.ExitCode != nil {
			s += fmt.Sprintf(" (exit code %d)", *r.ExitCode)
		}
	case r.Signal != "":
		s = "Process killed by signal " + r.Signal
	case r.ExitCode != nil:
		s = fmt.Sprintf("Process exited with code %d", *r.ExitCode)
	default:
		s = "Process exited"
	}
	if r.CoreDumped {
		s += " (core dumped)"
	}
	return s
}

// writeText appends one line per ended session and per warning.
func (n Notices) writeText(b *strings.Builder) {
	for _, e := range n.EndedSinceLastCall {
		log := ""
		if e.Completion != nil && e.LogPath != "" {
			log = "; full output log: " + e.LogPath
		}
		fmt.Fprintf(b, "Session %s (%s) ended: %s%s\n", e.SessionID, oneLine(e.Command, 60), endedPhrase(e), log)
	}
	for _, w := range n.Warnings {
		fmt.Fprintf(b, "Warning: %s\n", oneLine(w, 500))
	}
}

// endedPhrase is the short exit of an ended session: "exit code 2", "killed by signal
// SIGTERM", "timed out (exit code 124)".
func endedPhrase(e Ended) string {
	switch {
	case e.Pruned:
		return "pruned: ended by ptyhub at the limit of running sessions"
	case e.TimedOut:
		if e.ExitCode != nil {
			return fmt.Sprintf("timed out (exit code %d)", *e.ExitCode)
		}
		return "timed out"
	case e.Signal != "":
		return "killed by signal " + e.Signal
	case e.ExitCode != nil:
		return fmt.Sprintf("exit code %d", *e.ExitCode)
	}
	return "exited"
}

// Text returns the listing as a table (ID PID STATE AGE CLIENTS COMMAND LAST-LINE), the
// form `ptyhub ls` prints and list_sessions returns as text.
func (l *ListResult) Text() string {
	var b strings.Builder
	if len(l.Sessions) == 0 {
		b.WriteString("No sessions.\n")
	} else {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPID\tSTATE\tAGE\tQUIET\tCPU\tRSS\tPORTS\tCLIENTS\tCWD\tCOMMAND\tLAST-LINE")
		for _, s := range l.Sessions {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n",
				s.SessionID, dash(oneLine(s.Name, 20)), s.PID, s.stateText(), Age(time.Duration(s.AgeMs)*time.Millisecond),
				s.quietText(), s.cpuText(), s.rssText(), s.portsText(),
				s.Clients, s.cwdText(), oneLine(s.commandText(), 40), oneLine(s.LastLine, 60))
		}
		tw.Flush()
	}
	l.Notices.writeText(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRight(line, " ")
	}
	return strings.Join(lines, "\n")
}

// stateText is the STATE column: "running", "running(input)" (waits for input),
// "running(person)" (an agent asked for a person, or a password prompt waits),
// "exited(0)", "killed(SIGTERM)", "timed-out", "pruned" (ended by the session limit).
func (s Info) stateText() string {
	if s.State == StateRunning {
		if s.NeedsHuman || s.PasswordPrompt && s.WaitingForInput {
			return StateRunning + "(person)"
		}
		if s.WaitingForInput {
			return StateRunning + "(input)"
		}
		return StateRunning
	}
	switch {
	case s.Pruned:
		return "pruned"
	case s.TimedOut:
		return "timed-out"
	case s.Signal != "":
		return "killed(" + s.Signal + ")"
	case s.ExitCode != nil:
		return "exited(" + strconv.Itoa(*s.ExitCode) + ")"
	}
	if s.State == "" {
		return "-"
	}
	return s.State
}

// Text returns what kill_session did, in one or a few lines.
func (k *KillResult) Text() string {
	var b strings.Builder
	ended := Ended{SessionID: k.SessionID, ExitCode: k.ExitCode, Signal: k.Signal}
	switch {
	case k.SignalSent != "" && k.State == StateRunning:
		fmt.Fprintf(&b, "Sent %s to session %s; it is still running\n", k.SignalSent, k.SessionID)
	case k.SignalSent != "":
		fmt.Fprintf(&b, "Sent %s to session %s; it ended: %s\n", k.SignalSent, k.SessionID, endedPhrase(ended))
	case k.State == StateRunning:
		fmt.Fprintf(&b, "Session %s is still running\n", k.SessionID)
	case k.AlreadyEnded:
		fmt.Fprintf(&b, "Session %s had already ended: %s\n", k.SessionID, endedPhrase(ended))
	default:
		fmt.Fprintf(&b, "Session %s ended: %s\n", k.SessionID, endedPhrase(ended))
	}
	if len(k.Survivors) > 0 {
		fmt.Fprintf(&b, "Processes that outlived the session's main process were killed: %s\n", survivorList(k.Survivors, k.SurvivorsMore))
	}
	if k.Removed {
		fmt.Fprintf(&b, "Session %s removed; its transcript stays on disk\n", k.SessionID)
	}
	k.Notices.writeText(&b)
	return strings.TrimSuffix(b.String(), "\n")
}

// Text returns what resize_session did.
func (r *ResizeResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s resized to %d rows x %d columns\n", r.SessionID, r.Rows, r.Cols)
	r.Notices.writeText(&b)
	return strings.TrimSuffix(b.String(), "\n")
}

// Age formats a duration as ls-style age: "12s", "4m05s", "3h07m", "2d04h".
func Age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

func survivorList(ss []Survivor, more int) string {
	parts := make([]string, 0, len(ss)+1)
	for _, s := range ss {
		parts = append(parts, fmt.Sprintf("%d %s", s.PID, oneLine(s.Command, 40)))
	}
	if more > 0 {
		return fmt.Sprintf("%d processes: %s, … %d more", len(ss)+more, strings.Join(parts, ", "), more)
	}
	return strings.Join(parts, ", ")
}

// MaxSurvivorsListed bounds the survivors a result names (the others are counted): a
// session of thousands of jobs must not make a result of thousands of lines.
const MaxSurvivorsListed = 10

// listSurvivors returns a copy of the first MaxSurvivorsListed of ss and the count of
// the rest.
func listSurvivors(ss []Survivor) ([]Survivor, int) {
	n := min(len(ss), MaxSurvivorsListed)
	if n == 0 {
		return nil, 0
	}
	return append([]Survivor(nil), ss[:n]...), len(ss) - n
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// oneLine makes s safe for one cell or line of text: control characters (newlines, tabs,
// escape sequences) become spaces or are dropped, and it is cut to max runes with "…".
func oneLine(s string, max int) string {
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansi.Strip(s)
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
			r = ' '
		case r == utf8.RuneError || unicode.IsControl(r):
			continue
		}
		if n == max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimRight(b.String(), " ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// quietText is the QUIET column: time since the last output.
func (s Info) quietText() string {
	if s.LastOutputAgoMs == nil {
		return "-"
	}
	return Age(time.Duration(*s.LastOutputAgoMs) * time.Millisecond)
}

// cpuText is the CPU column: CPU time of the session's processes.
func (s Info) cpuText() string {
	if s.State != StateRunning {
		return "-"
	}
	d := time.Duration(s.CPUMs) * time.Millisecond
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return Age(d)
}

// rssText is the RSS column: resident memory of the session's processes.
func (s Info) rssText() string {
	if s.State != StateRunning || s.RSSBytes == 0 {
		return "-"
	}
	switch b := float64(s.RSSBytes); {
	case b >= 1<<30:
		return fmt.Sprintf("%.1fG", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0fM", b/(1<<20))
	default:
		return fmt.Sprintf("%.0fK", b/(1<<10))
	}
}

// portsText is the PORTS column: TCP ports the session's processes listen on.
func (s Info) portsText() string {
	if len(s.Ports) == 0 {
		return "-"
	}
	p := make([]string, len(s.Ports))
	for i, n := range s.Ports {
		p[i] = strconv.Itoa(n)
	}
	return strings.Join(p, ",")
}
