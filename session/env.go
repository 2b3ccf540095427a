package session

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

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

// A session's environment is the caller's (unless clearEnv) with PWD set to its
// directory, then the profile's variables (an envBase), then the request's variables,
// then PTYHUB_SESSION (envBase.with).

// envBase is a session's environment before the request's variables and PTYHUB_SESSION:
// the caller's environment (unless clearEnv) with PWD set to the session's directory,
// then the profile's variables. It is immutable once built, so the sessions of one caller
// world share it (worldCache).
type envBase struct {
	env   []string       // KEY=VALUE, each key once, in the order it was first set
	index map[string]int // key → its entry in env
}

// newEnvBase builds the envBase of base (the caller's environment), dir, profile and
// clearEnv. A key set twice keeps its first place and its last value, as in a shell.
func newEnvBase(base []string, dir, profile string, clearEnv bool) *envBase {
	b := &envBase{index: make(map[string]int, len(base)+len(agentEnv)+2)}
	if !clearEnv {
		b.env = make([]string, 0, len(base)+len(agentEnv)+2)
		for _, kv := range base {
			// A server's own mark (reaper.EnvServer) is not passed on: a session's
			// process carrying it would be recognised as a server by the sweeps.
			if k, _, ok := strings.Cut(kv, "="); ok && k != "" && k != reaper.EnvServer {
				b.setEntry(k, kv)
			}
		}
		// As a shell does for the programs it starts after a cd: the logical path of the
		// directory the program runs in.
		b.set("PWD", dir)
	}
	switch profile {
	case ProfileAgent:
		for _, kv := range agentEnv {
			b.set(kv[0], kv[1])
		}
		if b.get("LANG") == "" && b.get("LC_ALL") == "" && b.get("LC_CTYPE") == "" {
			b.set("LANG", "C.UTF-8")
		}
	case ProfilePlain:
		b.set("TERM", "xterm-256color")
	}
	return b
}

// set sets k to v while b is built.
func (b *envBase) set(k, v string) { b.setEntry(k, k+"="+v) }

// setEntry sets k to the entry kv ("k=…") while b is built.
func (b *envBase) setEntry(k, kv string) {
	if i, ok := b.index[k]; ok {
		b.env[i] = kv
		return
	}
	b.index[k] = len(b.env)
	b.env = append(b.env, kv)
}

// get returns the value of k in b ("" when unset).
func (b *envBase) get(k string) string {
	if i, ok := b.index[k]; ok {
		return b.env[i][len(k)+1:]
	}
	return ""
}

// with returns the child's environment: b, then extra's variables in the order of their
// names, then PTYHUB_SESSION=uuid; a variable b has keeps its place. Names and values of
// extra are checked. b is not modified: the result is a new slice.
func (b *envBase) with(extra map[string]string, uuid string) ([]string, error) {
	env := make([]string, len(b.env), len(b.env)+len(extra)+1)
	copy(env, b.env)
	// Requests' own variables appended by this call: a name set twice (only PTYHUB_SESSION
	// can be, after extra) is found here.
	var added map[string]int
	set := func(k, kv string) {
		if i, ok := b.index[k]; ok {
			env[i] = kv
		} else if i, ok := added[k]; ok {
			env[i] = kv
		} else {
			if added == nil {
				added = make(map[string]int, len(extra)+1)
			}
			added[k] = len(env)
			env = append(env, kv)
		}
	}
	if len(extra) > 0 {
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
			set(k, k+"="+v)
		}
	}
	set(reaper.EnvSession, reaper.EnvSession+"="+uuid)
	return env, nil
}

// worldCache keeps the envBase of each caller world a client's sessions start in (the
// directory, profile and clearEnv of a request; the caller's environment is the
// client's, immutable), so that each start copies one list instead of rebuilding it.
// At most worldCacheSize worlds are kept; past that the cache starts over. Safe for
// concurrent use; mu is a leaf lock.
type worldCache struct {
	mu     sync.Mutex
	worlds map[worldKey]*envBase
}

// worldCacheSize bounds a client's cached worlds (a client that names many directories
// rebuilds some environments, never holds more than this many).
const worldCacheSize = 16

type worldKey struct {
	dir, profile string
	clearEnv     bool
}

// base returns the envBase of base (the caller's environment, the same on every call
// for one cache), dir, profile and clearEnv, built on the first call for that world.
func (c *worldCache) base(base []string, dir, profile string, clearEnv bool) *envBase {
	k := worldKey{dir, profile, clearEnv}
	c.mu.Lock()
	b := c.worlds[k]
	c.mu.Unlock()
	if b != nil {
		return b
	}
	b = newEnvBase(base, dir, profile, clearEnv)
	c.mu.Lock()
	if c.worlds == nil || len(c.worlds) >= worldCacheSize {
		c.worlds = make(map[worldKey]*envBase)
	}
	c.worlds[k] = b
	c.mu.Unlock()
	return b
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
	fi, err := os.Stat(abs)
	if err == nil && fi.IsDir() {
		return abs, nil
	}
	// The directory as the request named it, then as resolved when that differs.
	name := fmt.Sprintf("%q", dir)
	if dir == "" {
		name = "(the caller's directory)"
	}
	if abs != dir {
		name += fmt.Sprintf(" (%s)", abs)
	}
	switch {
	case os.IsNotExist(err):
		return "", argError("workdir", fmt.Sprintf(" %s does not exist", name))
	case err != nil:
		return "", argError("workdir", fmt.Sprintf(" %s: %v", name, err))
	}
	return "", argError("workdir", fmt.Sprintf(" %s is not a directory", name))
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
