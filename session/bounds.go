package session

import "fmt"

// Size limits of the arguments of each call. They are checked before any work is done
// on an argument (a regular expression compiled, an environment built, a session
// looked up), so a call of any size costs at most its own decoding: a wait_for of 15 MiB
// would take hundreds of MB to compile.
const (
	// MaxPatternBytes bounds wait_for.
	MaxPatternBytes = 16 << 10
	// MaxArgBytes bounds cmd, each element of argv and each environment variable
	// (NAME=value): the kernel's limit of one string passed to a program (MAX_ARG_STRLEN,
	// 128 KiB with its terminating NUL).
	MaxArgBytes = 128<<10 - 1
	// MaxArgs bounds the elements of argv and the variables of env; MaxArgvBytes the
	// bytes of all of argv, and of all of env.
	MaxArgs      = 4096
	MaxArgvBytes = 1 << 20
	// MaxPathBytes bounds workdir and shell (the kernel's PATH_MAX).
	MaxPathBytes = 4096
	// MaxIDBytes bounds a session id or name as a caller gives it (HOST:ID included),
	// and host.
	MaxIDBytes = 1024
	// MaxListLen bounds the lists of a call other than argv (session_ids, keys, until);
	// MaxWordBytes each of their words and the short arguments (signal, view, profile).
	MaxListLen   = 1024
	MaxWordBytes = 64
)

// tooBig is the error of an argument over its limit.
func tooBig(arg string, n, limit int, unit string) error {
	return fmt.Errorf("%w: %s is %d %s, more than the limit of %d", ErrInvalid, arg, n, unit, limit)
}

func checkLen(arg, v string, limit int) error {
	if len(v) > limit {
		return tooBig(arg, len(v), limit, "bytes")
	}
	return nil
}

// checkList bounds a list of words: its length and each word.
func checkList(arg string, list []string, limit, each int) error {
	if len(list) > limit {
		return tooBig(arg, len(list), limit, "entries")
	}
	for i, v := range list {
		if len(v) > each {
			return tooBig(fmt.Sprintf("%s[%d]", arg, i), len(v), each, "bytes")
		}
	}
	return nil
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// CheckSizes reports the first argument over its size limit, naming it and the limit.
func (r ExecRequest) CheckSizes() error {
	if err := firstErr(
		checkLen("cmd", r.Cmd, MaxArgBytes),
		checkList("argv", r.Argv, MaxArgs, MaxArgBytes),
		checkLen("workdir", r.Workdir, MaxPathBytes),
		checkLen("shell", r.Shell, MaxPathBytes),
		checkLen("stdin", r.Stdin, MaxInputBytes),
		checkLen("wait_for", r.WaitFor, MaxPatternBytes),
		checkLen("profile", r.Profile, MaxWordBytes),
		checkLen("name", r.Name, MaxNameLen),
		checkLen("host", r.Host, MaxIDBytes),
	); err != nil {
		return err
	}
	total := 0
	for _, a := range r.Argv {
		total += len(a) + 1
	}
	if total > MaxArgvBytes {
		return tooBig("argv", total, MaxArgvBytes, "bytes in all")
	}
	if len(r.Env) > MaxArgs {
		return tooBig("env", len(r.Env), MaxArgs, "variables")
	}
	total = 0
	for k, v := range r.Env {
		n := len(k) + 1 + len(v)
		if n > MaxArgBytes {
			return tooBig(fmt.Sprintf("env[%.40q]", k), n, MaxArgBytes, "bytes (NAME=value)")
		}
		total += n + 1
	}
	if total > MaxArgvBytes {
		return tooBig("env", total, MaxArgvBytes, "bytes in all")
	}
	return nil
}

// CheckSizes reports the first argument over its size limit, naming it and the limit.
func (r WriteRequest) CheckSizes() error {
	return firstErr(
		checkLen("session_id", r.SessionID, MaxIDBytes),
		checkLen("chars", r.Chars, MaxInputBytes),
		checkList("keys", r.Keys, MaxListLen, MaxWordBytes),
		checkLen("wait_for", r.WaitFor, MaxPatternBytes),
	)
}

// CheckSizes reports the first argument over its size limit, naming it and the limit.
func (r ReadRequest) CheckSizes() error {
	return firstErr(
		checkLen("session_id", r.SessionID, MaxIDBytes),
		checkLen("view", r.View, MaxWordBytes),
	)
}

// CheckSizes reports the first argument over its size limit, naming it and the limit.
func (r KillRequest) CheckSizes() error {
	return firstErr(
		checkLen("session_id", r.SessionID, MaxIDBytes),
		checkLen("signal", r.Signal, MaxWordBytes),
	)
}

// CheckSizes reports the first argument over its size limit, naming it and the limit.
func (r ResizeRequest) CheckSizes() error {
	return checkLen("session_id", r.SessionID, MaxIDBytes)
}

// CheckSizes reports the first argument over its size limit, naming it and the limit.
func (r WaitRequest) CheckSizes() error {
	return firstErr(
		checkList("session_ids", r.SessionIDs, MaxListLen, MaxIDBytes),
		checkList("until", r.Until, MaxListLen, MaxWordBytes),
		checkLen("wait_for", r.WaitFor, MaxPatternBytes),
	)
}

// CheckSizes reports the first argument over its size limit, naming it and the limit.
func (r WatchRequest) CheckSizes() error {
	if err := checkList("session_ids", r.SessionIDs, MaxListLen*8, MaxIDBytes); err != nil {
		return err
	}
	if len(r.Heard) > MaxListLen*8 {
		return tooBig("heard", len(r.Heard), MaxListLen*8, "entries")
	}
	return nil
}
