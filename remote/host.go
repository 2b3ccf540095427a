// Package remote reaches the ptyhub server of another machine through a transport the
// user already trusts: ssh, docker exec, kubectl exec, or any program that runs a
// command there with its stdin and stdout joined to ours. The far end of every transport
// is `ptyhub dial-stdio`, which joins that machine's per-user server; this package runs
// the transport program (argv only: no shell ever sees a URL) and offers its stdin and
// stdout as a net.Conn (see Dial), as docker's `-H ssh://` does.
package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

// Target is a resolved host: the program that reaches it and the name to show.
type Target struct {
	// Name is how the user named the host (a URL or a configured name); session ids
	// from the host read Name:ID.
	Name string
	// Argv runs the transport: its stdin and stdout become the connection to the
	// host's server.
	Argv []string
	// Install says how to get ptyhub onto the host (for the "not installed" error).
	Install string
}

// ErrBadHost marks a host specification that cannot be used.
var ErrBadHost = errors.New("bad host")

// Environment variables that shape the transports.
const (
	// EnvSSH is the ssh command line (default "ssh"), split into words as a shell
	// would split plain words and quotes, but never run by a shell.
	EnvSSH = "PTYHUB_SSH"
	// EnvRemote is the ptyhub program on the far side (default "ptyhub", found on the
	// PATH of the remote command), e.g. /home/me/go/bin/ptyhub.
	EnvRemote = "PTYHUB_REMOTE"
	// EnvHost is the default host of the CLI and of ptyhub mcp.
	EnvHost = "PTYHUB_HOST"
)

// HostsFile is the named-hosts file: $XDG_CONFIG_HOME/ptyhub/hosts.json, else
// ~/.config/ptyhub/hosts.json.
func HostsFile() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "ptyhub", "hosts.json")
}

// namedHost is one entry of hosts.json: either a URL, or a program and its arguments
// (which must end by running `ptyhub dial-stdio` on the host).
type namedHost struct {
	URL     string   `json:"url,omitempty"`
	Program string   `json:"program,omitempty"`
	Args    []string `json:"args,omitempty"`
}

type hostsFile struct {
	Hosts map[string]namedHost `json:"hosts"`
}

// Resolve turns a host specification into the program that reaches it: an
// ssh://[user@]host[:port], docker://CONTAINER or kube://[NAMESPACE/]POD[/CONTAINER] URL,
// or a name from the hosts file. getenv reads the environment (nil: os.Getenv).
func Resolve(spec string, getenv func(string) string) (Target, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if spec == "" {
		return Target{}, fmt.Errorf("%w: empty host", ErrBadHost)
	}
	if !strings.Contains(spec, "://") {
		return resolveNamed(spec, getenv)
	}
	return resolveURL(spec, spec, getenv)
}

func resolveNamed(name string, getenv func(string) string) (Target, error) {
	path := HostsFile()
	if v := getenv("XDG_CONFIG_HOME"); v != "" && filepath.IsAbs(v) {
		path = filepath.Join(v, "ptyhub", "hosts.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Target{}, fmt.Errorf("%w: %q is neither a URL (ssh://, docker://, kube://) nor a host named in %s (there is no such file)", ErrBadHost, name, path)
		}
		return Target{}, fmt.Errorf("%w: %v", ErrBadHost, err)
	}
	var f hostsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Target{}, fmt.Errorf("%w: %s: %v", ErrBadHost, path, err)
	}
	h, ok := f.Hosts[name]
	if !ok {
		return Target{}, fmt.Errorf("%w: %q is neither a URL (ssh://, docker://, kube://) nor a host named in %s", ErrBadHost, name, path)
	}
	switch {
	case h.URL != "" && h.Program == "":
		return resolveURL(name, h.URL, getenv)
	case h.Program != "" && h.URL == "":
		return Target{Name: name, Argv: append([]string{h.Program}, h.Args...),
			Install: fmt.Sprintf("install ptyhub where %s runs its command, or fix the host's program and args in %s", name, path)}, nil
	}
	return Target{}, fmt.Errorf("%w: host %q in %s needs either url or program (with args)", ErrBadHost, name, path)
}

// word reports whether s can be passed as one argument without being taken for an
// option or being split: not empty, no leading '-', no spaces or control characters.
func word(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func resolveURL(name, raw string, getenv func(string) string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Target{}, fmt.Errorf("%w: %v", ErrBadHost, err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Target{}, fmt.Errorf("%w: %q: a host URL has no query, fragment or opaque part", ErrBadHost, raw)
	}
	remote := getenv(EnvRemote)
	if remote == "" {
		remote = "ptyhub"
	}
	t := Target{Name: name}
	switch u.Scheme {
	case "ssh":
		host := u.Hostname()
		if !word(host) || (u.Path != "" && u.Path != "/") {
			return Target{}, fmt.Errorf("%w: %q: want ssh://[user@]host[:port]", ErrBadHost, raw)
		}
		ssh, err := SplitCommand(getenv(EnvSSH))
		if err != nil {
			return Target{}, fmt.Errorf("%w: %s: %v", ErrBadHost, EnvSSH, err)
		}
		if len(ssh) == 0 {
			ssh = []string{"ssh"}
		}
		t.Argv = ssh
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return Target{}, fmt.Errorf("%w: %q: bad port %q", ErrBadHost, raw, p)
			}
			t.Argv = append(t.Argv, "-p", strconv.Itoa(n))
		}
		dest := host
		if u.User != nil {
			user := u.User.Username()
			if _, hasPass := u.User.Password(); hasPass || !word(user) || strings.Contains(user, "@") {
				return Target{}, fmt.Errorf("%w: %q: want ssh://[user@]host[:port] (no password: ssh asks for it, or use a key)", ErrBadHost, raw)
			}
			dest = user + "@" + host
		}
		// ssh joins the remote command into one line for the remote user's shell, so the
		// program is quoted for that shell; the URL's parts are ssh's own arguments.
		t.Argv = append(t.Argv, dest, "--", shellQuote(remote), "dial-stdio")
		t.Install = fmt.Sprintf("install it there ('go install ./cmd/ptyhub' in a checkout on %s, or copy a ptyhub binary there), make sure a non-interactive ssh session finds it on its PATH, or set %s to its path on that host", host, EnvRemote)
	case "docker":
		c := u.Host
		if !word(c) || (u.Path != "" && u.Path != "/") || u.User != nil {
			return Target{}, fmt.Errorf("%w: %q: want docker://CONTAINER", ErrBadHost, raw)
		}
		t.Argv = []string{"docker", "exec", "-i", c, remote, "dial-stdio"}
		t.Install = fmt.Sprintf("copy a ptyhub binary into the container ('docker cp ptyhub %s:/usr/local/bin/'), or set %s to its path there", c, EnvRemote)
	case "kube":
		parts := strings.Split(strings.Trim(u.Host+u.Path, "/"), "/")
		var ns, pod, ctr string
		switch len(parts) {
		case 1:
			pod = parts[0]
		case 2:
			ns, pod = parts[0], parts[1]
		case 3:
			ns, pod, ctr = parts[0], parts[1], parts[2]
		}
		if !word(pod) || (ns != "" && !word(ns)) || (ctr != "" && !word(ctr)) || u.User != nil || len(parts) > 3 {
			return Target{}, fmt.Errorf("%w: %q: want kube://[NAMESPACE/]POD[/CONTAINER]", ErrBadHost, raw)
		}
		t.Argv = []string{"kubectl", "exec", "-i"}
		if ns != "" {
			t.Argv = append(t.Argv, "-n", ns)
		}
		t.Argv = append(t.Argv, pod)
		if ctr != "" {
			t.Argv = append(t.Argv, "-c", ctr)
		}
		t.Argv = append(t.Argv, "--", remote, "dial-stdio")
		t.Install = fmt.Sprintf("copy a ptyhub binary into the pod ('kubectl cp ptyhub %s:/usr/local/bin/ptyhub'), or set %s to its path there", pod, EnvRemote)
	default:
		return Target{}, fmt.Errorf("%w: %q: unknown scheme %q (ssh://, docker:// or kube://, or a name from %s)", ErrBadHost, raw, u.Scheme, HostsFile())
	}
	return t, nil
}

// shellQuote quotes s for a POSIX shell unless it is made only of safe characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == ',' || r == '@' || r == '=' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// SplitCommand splits a command line such as PTYHUB_SSH into words: blanks separate
// words, single quotes keep everything literally, double quotes keep everything but
// backslash escapes of `"` and `\`, a backslash outside quotes escapes the next
// character. Nothing else is special: no variables, globs or substitutions.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false // inside a word
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\':
			in = true
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
		case c == '\'':
			in = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			in = true
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}
