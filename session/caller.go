package session

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Caller is the world a client's sessions start in, as a shell would start them for the
// person or agent that called: its working directory (a relative workdir resolves against
// it) and its environment (the base of every session's environment; the profile and the
// request's env apply on top).
//
// The zero Caller stands for the manager's own process (its working directory and
// environment at each start): right for an embedder that runs sessions for itself, wrong
// for a server that runs them for others.
type Caller struct {
	// Dir is an absolute path; it may go through symbolic links (a shell's logical path).
	Dir string `json:"dir"`
	// Env is KEY=VALUE entries. With Dir set it is used as given, even when empty.
	Env []string `json:"env"`
}

// Here returns the Caller that is this process: its logical working directory ($PWD
// when that names the same directory as getcwd, as shells do, else getcwd) and its
// environment.
func Here() (Caller, error) {
	dir, err := LogicalWd()
	if err != nil {
		return Caller{}, err
	}
	return Caller{Dir: dir, Env: os.Environ()}, nil
}

// LogicalWd returns the working directory as the user typed their way to it: $PWD when it
// is an absolute, clean path naming the same directory as getcwd (so a directory reached
// through a symbolic link keeps the link's name), else getcwd.
func LogicalWd() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	if p := os.Getenv("PWD"); p != "" && filepath.IsAbs(p) && filepath.Clean(p) == p && p != wd {
		a, aerr := os.Stat(p)
		b, berr := os.Stat(wd)
		if aerr == nil && berr == nil && os.SameFile(a, b) {
			return p, nil
		}
	}
	return wd, nil
}

// Check returns an ErrInvalid error unless c is the zero Caller or has an absolute Dir
// and well-formed Env entries.
func (c Caller) Check() error {
	if c.Dir == "" {
		if len(c.Env) > 0 {
			return fmt.Errorf("%w: caller environment without a directory", ErrInvalid)
		}
		return nil
	}
	if !filepath.IsAbs(c.Dir) || strings.ContainsRune(c.Dir, 0) {
		return fmt.Errorf("%w: caller directory %q is not an absolute path", ErrInvalid, c.Dir)
	}
	for _, kv := range c.Env {
		if !strings.Contains(kv, "=") || strings.ContainsRune(kv, 0) {
			return fmt.Errorf("%w: caller environment entry %q is not KEY=VALUE", ErrInvalid, kv)
		}
	}
	return nil
}

// secretWords are the parts of a variable name that mark it as a credential (compared
// case-insensitively): API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, PGPASSWORD…
var secretWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD"}

// IsSecretName reports whether an environment variable's name marks it as a credential:
// it contains KEY, SECRET, TOKEN or PASSWORD, in any case.
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// WithoutSecrets returns env without the variables whose names mark them as credentials
// (IsSecretName), except those matching one of allow (exact names, or shell patterns such
// as AWS_*), and the names it left out. env is not modified.
func WithoutSecrets(env []string, allow []string) (kept []string, dropped []string) {
	kept = make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if IsSecretName(name) && !allowed(name, allow) {
			dropped = append(dropped, name)
			continue
		}
		kept = append(kept, kv)
	}
	return kept, dropped
}

func allowed(name string, allow []string) bool {
	for _, pat := range allow {
		if pat == name {
			return true
		}
		if ok, err := path.Match(pat, name); err == nil && ok {
			return true
		}
	}
	return false
}
