package session

// ArgError is an invalid argument of a request: which argument, and what is wrong with
// it. The engine returns it; each interface words it, naming the argument as its user
// typed it (Text): the MCP tools by the request's JSON names (wait_for, workdir,
// timeout_ms), the CLI by its flags (--wait-for, --cwd, --timeout). It is an ErrInvalid
// (errors.Is), and it crosses the server's protocol whole, so a CLI client words an
// error the server found.
type ArgError struct {
	// Arg is the argument at fault, by its JSON name.
	Arg string `json:"arg"`
	// Problem follows the argument's name: ` is not a valid regular expression …`.
	Problem string `json:"problem"`
	// Other, when set, is a second argument the problem names (by its JSON name); it is
	// named after Problem and followed by After: from ` 100 is after ` to ` 10`.
	Other string `json:"other,omitempty"`
	After string `json:"after,omitempty"`
}

// argError returns the ArgError of arg: its name, then problem.
func argError(arg, problem string) *ArgError { return &ArgError{Arg: arg, Problem: problem} }

// Error words e as the MCP tools do: "invalid argument: wait_for is not …".
func (e *ArgError) Error() string { return ErrInvalid.Error() + ": " + e.Text(nil) }

// Is makes an ArgError an ErrInvalid.
func (e *ArgError) Is(target error) bool { return target == ErrInvalid }

// Text words the problem, naming each argument by name(its JSON name); a nil name keeps
// the JSON names.
func (e *ArgError) Text(name func(arg string) string) string {
	if name == nil {
		name = func(a string) string { return a }
	}
	s := name(e.Arg) + e.Problem
	if e.Other != "" {
		s += name(e.Other) + e.After
	}
	return s
}

// ExitedUnread ends the ErrExited error of input refused by a session that has exited
// with output its reader has not read yet. The engine does not say how to read it: each
// interface adds that in its own words when the message holds this phrase (the MCP tools:
// poll with write_stdin; the CLI: ptyhub read).
const ExitedUnread = "it printed output you have not read yet"
