// Package shellint adds shell integration to interactive bash, zsh and fish sessions:
// it recognises a command that starts one, rewrites its argv and environment so the
// shell reads ptyhub's hooks after the user's own files (the user's files are never
// changed), and follows the marks the hooks print (OSC 133 prompt/command marks and
// OSC 7 directory reports) through the session's output (Tracker).
package shellint

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

//go:embed scripts
var scripts embed.FS

// Kind names a shell ptyhub integrates with.
type Kind string

// The shells ptyhub integrates with.
const (
	Bash Kind = "bash"
	Zsh  Kind = "zsh"
	Fish Kind = "fish"
)

// Detect reports which shell argv starts, when it starts it interactively with nothing
// ptyhub's hooks could disturb: the program's base name is bash, zsh or fish (a leading
// "-", a login shell's argv[0], is allowed) and the only arguments are -i. A command
// (-c), a script, a login shell (-l) or any other option starts no integration.
func Detect(argv []string) (Kind, bool) {
	if len(argv) == 0 {
		return "", false
	}
	var k Kind
	switch strings.TrimPrefix(filepath.Base(argv[0]), "-") {
	case "bash":
		k = Bash
	case "zsh":
		k = Zsh
	case "fish":
		k = Fish
	default:
		return "", false
	}
	for _, a := range argv[1:] {
		if a != "-i" && a != "--interactive" {
			return "", false
		}
	}
	return k, true
}

// Dir holds the hook scripts on disk, written once on first use into a private
// temporary directory (0700) and removed by Close. Safe for concurrent use.
type Dir struct {
	mu   sync.Mutex
	path string
}

// path returns the directory, writing the scripts the first time.
func (d *Dir) dir() (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.path != "" {
		return d.path, nil
	}
	p, err := os.MkdirTemp("", "ptyhub-shell-")
	if err != nil {
		return "", fmt.Errorf("shell integration: %w", err)
	}
	files := map[string]string{"bashrc": "bashrc", "zshenv": ".zshenv", "zprofile": ".zprofile",
		"zshrc": ".zshrc", "config.fish": "config.fish"}
	for src, dst := range files {
		data, err := scripts.ReadFile("scripts/" + src)
		if err == nil {
			err = os.WriteFile(filepath.Join(p, dst), data, 0o600)
		}
		if err != nil {
			os.RemoveAll(p)
			return "", fmt.Errorf("shell integration: %w", err)
		}
	}
	d.path = p
	return p, nil
}

// Close removes the scripts. Shells already started have read them; a shell started
// after Close writes them again.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.path == "" {
		return nil
	}
	err := os.RemoveAll(d.path)
	d.path = ""
	return err
}

// Prepare returns the argv and environment that start the shell of kind k (argv as
// Detect accepted it) with integration: bash with --rcfile, zsh with ZDOTDIR pointing at
// the scripts (the user's ZDOTDIR, if set, kept in PTYHUB_ZDOTDIR for them to read),
// fish with --init-command. env is not modified; the result is a new slice.
func (d *Dir) Prepare(k Kind, argv, env []string) ([]string, []string, error) {
	dir, err := d.dir()
	if err != nil {
		return nil, nil, err
	}
	out := make([]string, 0, len(env)+2)
	for _, e := range env {
		if strings.HasPrefix(e, "PTYHUB_ZDOTDIR=") {
			continue
		}
		if k == Zsh && strings.HasPrefix(e, "ZDOTDIR=") {
			out = append(out, "PTYHUB_ZDOTDIR="+e[len("ZDOTDIR="):])
			continue
		}
		out = append(out, e)
	}
	switch k {
	case Bash:
		return []string{argv[0], "--rcfile", filepath.Join(dir, "bashrc"), "-i"}, out, nil
	case Zsh:
		return []string{argv[0], "-i"}, append(out, "ZDOTDIR="+dir), nil
	case Fish:
		return []string{argv[0], "-i", "--init-command", "source " + quoteFish(filepath.Join(dir, "config.fish"))}, out, nil
	}
	return nil, nil, fmt.Errorf("shell integration: unknown shell %q", k)
}

// quoteFish quotes s as one fish word.
func quoteFish(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
