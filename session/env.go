package session

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ptyhub/ptyhub/reaper"
)

// Profiles of the environment a session sees.
const (
	ProfileAgent = "agent"
	ProfilePlain = "plain"
)

// agentEnv is what profile "agent" sets: a capable terminal, no colour, no pager that
// would wait for a key, and no cargo progress bar: cargo erases its bar only when it
// may use colour, so under NO_COLOR its warnings would be printed over the bar's
// remains ("warning: …mutable2/6: parse, render"). Without NO_COLOR, tsc and others
// print longer, decorated diagnostics; the corpus in testdata/corpus measures both.
var agentEnv = [][2]string{
	{"TERM", "xterm-256color"},
	{"NO_COLOR", "1"},
	{"CARGO_TERM_PROGRESS_WHEN", "never"},
	{"PAGER", "cat"},
	{"GIT_PAGER", "cat"},
	{"GH_PAGER", "cat"},
	{"MANPAGER", "cat"},
	{"SYSTEMD_PAGER", ""},
	{"AWS_PAGER", ""},
}

// envKey reports whether k is a portable environment variable name: a letter or _, then
// letters, digits and _. (A loop, not a regexp compiled at start: every CLI call would pay
// for compiling it.)
func envKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return k != ""
}

// buildEnv returns the child's environment: base, the caller's environment (unless
// clearEnv) with PWD set to dir, then the profile, then the request's variables, then
// PTYHUB_SESSION. Keys are checked.
func buildEnv(base []string, dir, profile string, clearEnv bool, extra map[string]string, uuid string) ([]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	if !clearEnv {
		for _, kv := range base {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				set(k, v)
			}
		}
		// As a shell does for the programs it starts after a cd: the logical path of the
		// directory the program runs in.
		set("PWD", dir)
	}
	switch profile {
	case ProfileAgent:
		for _, kv := range agentEnv {
			set(kv[0], kv[1])
		}
		if vars["LANG"] == "" && vars["LC_ALL"] == "" && vars["LC_CTYPE"] == "" {
			set("LANG", "C.UTF-8")
		}
	case ProfilePlain:
		set("TERM", "xterm-256color")
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := extra[k]
		if !envKey(k) {
			return nil, argError("env", fmt.Sprintf(": %q is not a valid variable name (letters, digits and _, not starting with a digit)", k))
		}
		if strings.ContainsRune(v, 0) {
			return nil, argError("env", fmt.Sprintf(": the value of %s contains a NUL byte", k))
		}
		set(k, v)
	}
	set(reaper.EnvSession, uuid)
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return env, nil
}

// getenv looks a variable up in an environment list (last one wins).
func getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// resolveWorkdir returns the directory a session runs in: dir, made absolute against
// base (the caller's directory), lexically cleaned (symbolic links are kept, as a shell's
// logical path keeps them), and checked to be a directory. An empty dir is base itself.
func resolveWorkdir(base, dir string) (string, error) {
	abs := dir
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, dir)
	}
	abs = filepath.Clean(abs)
	name := fmt.Sprintf("%q", dir)
	if dir == "" {
		name = "(the caller's directory)"
	}
	if abs != dir {
		name += fmt.Sprintf(" (%s)", abs)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if os.IsNotExist(err) {
			return "", argError("workdir", fmt.Sprintf(" %s does not exist", name))
		}
		return "", argError("workdir", fmt.Sprintf(" %s: %v", name, err))
	}
	if !fi.IsDir() {
		return "", argError("workdir", fmt.Sprintf(" %s is not a directory", name))
	}
	return abs, nil
}

// lookPath resolves file on the child's PATH (not the manager's), relative to dir.
func lookPath(file, pathEnv, dir string) (string, error) {
	check := func(p string) error {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return os.ErrPermission
		}
		return nil
	}
	if strings.Contains(file, "/") {
		if err := check(file); err != nil {
			return "", err
		}
		if !filepath.IsAbs(file) {
			return filepath.Join(dir, file), nil
		}
		return file, nil
	}
	if pathEnv == "" {
		pathEnv = "/usr/local/bin:/usr/bin:/bin"
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, file)
		if check(p) == nil {
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// defaultShell is $SHELL, else /bin/bash, else /bin/sh.
func defaultShell(env []string) string {
	if s := getenv(env, "SHELL"); s != "" {
		if _, err := os.Stat(s); err == nil {
			return s
		}
	}
	if _, err := os.Stat("/bin/bash"); err == nil {
		return "/bin/bash"
	}
	return "/bin/sh"
}
