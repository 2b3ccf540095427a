package session

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/ptyhub/ptyhub/shellint"
	"github.com/ptyhub/ptyhub/termtext"
	"github.com/ptyhub/ptyhub/truncate"
)

// Shell integration: an interactive bash, zsh or fish started as a session reads
// ptyhub's hooks after the user's own rc (package shellint), and its marks make each
// command line typed into it one command: a write returns at the next prompt, with that
// command's output only and its exit status, directory and duration.

// WaitShell is Result.WaitDetection when an integrated shell's prompt mark decided that
// it waits for input.
const WaitShell = "shell"

// ShellCommand is a command of an integrated shell, in a result.
type ShellCommand struct {
	// Command is the command line as the shell ran it.
	Command string `json:"command" jsonschema:"the command line as the shell ran it"`
	// ExitCode is its exit status (absent while it runs).
	ExitCode *int `json:"exit_code,omitempty" jsonschema:"the command's exit status as the shell reported it ($?); absent while it runs"`
	// Cwd is the shell's directory after the command (while it runs: when it started).
	Cwd string `json:"cwd,omitempty" jsonschema:"the shell's working directory after the command"`
	// DurationMs is how long it ran, from its start mark to its end mark.
	DurationMs *float64 `json:"duration_ms,omitempty" jsonschema:"how long the command ran, in ms"`
	// Running: the command had not ended when the call returned.
	Running bool `json:"running,omitempty" jsonschema:"the command was still running when the call returned: poll with write_stdin to get the rest and its exit code"`
}

// text is the line of a result's text body that tells of the command.
func (c *ShellCommand) text() string {
	if c.ExitCode == nil {
		return fmt.Sprintf("Shell command still running: %s", c.Command)
	}
	return fmt.Sprintf("Shell command exited with code %d after %.3f seconds: %s (directory now %s)", *c.ExitCode, *c.DurationMs/1000, c.Command, c.Cwd)
}

// ShellState is an integrated shell's state, in a listing.
type ShellState struct {
	// Cwd is the shell's directory, as it last reported it.
	Cwd string `json:"cwd" jsonschema:"the shell's working directory"`
	// Command is the command line running now (absent at the prompt), for RunningMs.
	Command   string `json:"command,omitempty" jsonschema:"the command line running now; absent at the prompt"`
	RunningMs *int64 `json:"running_ms,omitempty" jsonschema:"how long the command running now has run, in ms"`
	// LastCommand and LastExitCode describe the last command that ended.
	LastCommand  string `json:"last_command,omitempty" jsonschema:"the last command line that ended"`
	LastExitCode *int   `json:"last_exit_code,omitempty" jsonschema:"the exit status of last_command"`
}

// integrate rewrites *argv and *env to start an interactive bash, zsh or fish with
// shell integration, unless req turns it off or the session has no terminal. A cmd is
// looked at as the words it is made of when it has no shell syntax. It returns the kind
// of the integrated shell ("" when the session is not integrated).
func (m *Manager) integrate(req *ExecRequest, tty bool, argv, env *[]string) (shellint.Kind, error) {
	if !tty || req.ShellIntegration != nil && !*req.ShellIntegration {
		return "", nil
	}
	words := *argv
	if req.Cmd != "" {
		if req.Login || strings.ContainsAny(req.Cmd, "'\"\\$`;&|<>(){}*?[]~#=\n") {
			return "", nil
		}
		words = strings.Fields(req.Cmd)
	}
	kind, ok := shellint.Detect(words)
	if !ok {
		return "", nil
	}
	a, e, err := m.shells.Prepare(kind, words, *env)
	if err != nil {
		return "", err
	}
	*argv, *env = a, e
	return kind, nil
}

// shellKernel reports whether a write of data into an integrated shell must wait for
// the general waiting-for-input detection rather than end at the first prompt mark:
// when data holds several lines, the shell may have more of them to read after the
// first prompt. bash (readline) and zsh (zle) leave unread input in the terminal, where
// the detection sees it; fish reads all of it at once, so the terminal cannot tell, and
// its first prompt ends the call.
func (s *Session) shellKernel(data []byte) bool {
	if s.sh == nil || s.sh.Kind() == shellint.Fish {
		return false
	}
	i := bytes.IndexAny(data, "\r\n")
	return i >= 0 && bytes.ContainsAny(data[i+1:], "\r\n")
}

// shellYield is the yield window of a write into an integrated shell: a command line
// typed at its prompt, or a signal key (^C, ^\, ^Z) typed while a command runs, gets
// exec_command's default, since it returns when the command ends, not at the first
// pause.
func (s *Session) shellYield(req *WriteRequest, data []byte) *int64 {
	if req.YieldTimeMs != nil || s.sh == nil || len(data) == 0 {
		return req.YieldTimeMs
	}
	line := s.sh.Prompting() && bytes.ContainsAny(data, "\r\n")
	signal := !s.sh.Prompting() && len(bytes.Trim(data, "\x03\x1c\x1a")) == 0
	if !line && !signal {
		return req.YieldTimeMs
	}
	d := int64(DefaultExecYieldMs)
	return &d
}

// shellResult narrows r, the result of a collect over [col.from, col.next) of an
// integrated shell, to the commands that ended in it (or the one still running): the
// output becomes their output only, without the echoed command line and prompts, and
// r.Shell describes the last of them. typed is the input of the call, whose first line
// names the command when the shell did not.
func (s *Session) shellResult(r *Result, col collected, budget int, typed []byte) {
	if s.sh == nil {
		return
	}
	cmds := s.sh.Finished(col.from, col.next)
	if run := s.sh.State().Running; run != nil && run.OutFrom <= col.next {
		cmds = append(cmds, *run)
	}
	if len(cmds) == 0 {
		return
	}
	var ranges [][2]int64
	for _, c := range cmds {
		to := col.next
		if c.Done {
			to = c.OutTo
		}
		ranges = append(ranges, [2]int64{max(c.OutFrom, col.from), max(to, col.from)})
	}
	last := cmds[len(cmds)-1]
	fin := cmds
	sc := &ShellCommand{Command: last.Line, Cwd: last.Cwd, Running: !last.Done}
	if sc.Command == "" && len(fin) <= 1 {
		line, _, _ := bytes.Cut(typed, []byte("\n"))
		sc.Command = strings.TrimSpace(strings.TrimRight(string(line), "\r"))
	}
	if last.Done {
		code := last.ExitCode
		d := float64(last.End.Sub(last.Start).Microseconds()) / 1000
		sc.ExitCode, sc.DurationMs = &code, &d
	}
	r.Shell = sc
	tr, missed := s.textOf(ranges, budget)
	r.Output, r.OriginalTokenCount, r.TruncatedRange = tr.Text, nil, nil
	if tr.Truncated {
		n := tr.OriginalTokens
		r.OriginalTokenCount = &n
		r.TruncatedRange = &[2]int64{tr.CutFrom, tr.CutTo}
	}
	if missed > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d bytes of the command's output have left memory and are not shown", missed))
	}
}

// textOf converts the raw output of ranges (each [from, to)) into one text within
// budget, each range converted on its own (a command's output starts a line).
func (s *Session) textOf(ranges [][2]int64, budget int) (truncate.Result, int64) {
	coll := truncate.NewCollector(budget)
	coll.CountedElsewhere()
	var cnt truncate.RawCounter
	var missed int64
	for _, rg := range ranges {
		// One run of bytes at a time: a hole (bytes in neither memory nor the
		// transcript) may sit inside a range, not only at its start.
		for from := rg[0]; from < rg[1]; {
			raw, m, end := s.readRaw(from, rg[1])
			missed += m
			cnt.Write(raw)
			base := from + m
			var conv termtext.Converter
			lineFrom := base
			truncate.ConvertLines(&conv, coll, nil, raw, base, &lineFrom)
			if rest := truncate.WriteReleased(&conv, coll, conv.Close(nil), base+int64(len(raw))); len(rest) > 0 {
				coll.Write(rest, lineFrom, base+int64(len(raw)))
			}
			if end <= from {
				break // nothing more to read (the output ends before rg[1])
			}
			from = end
		}
	}
	tr := coll.Result()
	if tr.Truncated {
		tr.SetOriginal(max(cnt.Tokens(), 1))
	}
	return tr, missed
}

// cwdText is the CWD column of a listing: an integrated shell's directory, shortened
// to its last 30 characters; "-" for other sessions.
func (s Info) cwdText() string {
	if s.Shell == nil || s.Shell.Cwd == "" {
		return "-"
	}
	if r := []rune(s.Shell.Cwd); len(r) > 30 {
		return "…" + string(r[len(r)-29:])
	}
	return s.Shell.Cwd
}

// commandText is the COMMAND column of a listing: the session's command, and for an
// integrated shell the command line running in it ("bash: make test") or the last one
// and its exit code ("bash (last: make test → 2)").
func (s Info) commandText() string {
	switch sh := s.Shell; {
	case sh == nil || s.State != StateRunning:
		return s.Command
	case sh.Command != "" || sh.RunningMs != nil:
		return s.Command + ": " + sh.Command
	case sh.LastExitCode != nil:
		return fmt.Sprintf("%s (last: %s → %d)", s.Command, sh.LastCommand, *sh.LastExitCode)
	}
	return s.Command
}

// shellInfo is the listing's shell state of s (nil when s is not an integrated shell).
func (s *Session) shellInfo(now time.Time) *ShellState {
	if s.sh == nil {
		return nil
	}
	st := s.sh.State()
	out := &ShellState{Cwd: st.Cwd}
	if st.Running != nil && !s.isExited() {
		out.Command = st.Running.Line
		ms := now.Sub(st.Running.Start).Milliseconds()
		out.RunningMs = &ms
	}
	if st.Last != nil {
		out.LastCommand = st.Last.Line
		code := st.Last.ExitCode
		out.LastExitCode = &code
	}
	return out
}
