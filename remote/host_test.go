package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/route"
)

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

// The argv each URL builds: argv only, the URL's parts as single arguments, the remote
// program quoted for the remote shell ssh hands it to.
func TestResolveArgv(t *testing.T) {
	cases := []struct {
		spec string
		env  []string
		want []string
	}{
		{"ssh://box", nil, []string{"ssh", "box", "--", "ptyhub", "dial-stdio"}},
		{"ssh://me@box:2222", nil, []string{"ssh", "-p", "2222", "me@box", "--", "ptyhub", "dial-stdio"}},
		{"ssh://me@[::1]:22/", nil, []string{"ssh", "-p", "22", "me@::1", "--", "ptyhub", "dial-stdio"}},
		{"ssh://box", []string{EnvSSH, `ssh -i "/my keys/id" -o 'ProxyJump=a b'`, EnvRemote, "/opt/my ptyhub/ptyhub"},
			[]string{"ssh", "-i", "/my keys/id", "-o", "ProxyJump=a b", "box", "--", "'/opt/my ptyhub/ptyhub'", "dial-stdio"}},
		{"docker://web-1", nil, []string{"docker", "exec", "-i", "web-1", "ptyhub", "dial-stdio"}},
		{"docker://web-1", []string{EnvRemote, "/usr/local/bin/ptyhub"}, []string{"docker", "exec", "-i", "web-1", "/usr/local/bin/ptyhub", "dial-stdio"}},
		{"kube://pod-7", nil, []string{"kubectl", "exec", "-i", "pod-7", "--", "ptyhub", "dial-stdio"}},
		{"kube://dev/pod-7", nil, []string{"kubectl", "exec", "-i", "-n", "dev", "pod-7", "--", "ptyhub", "dial-stdio"}},
		{"kube://dev/pod-7/app", nil, []string{"kubectl", "exec", "-i", "-n", "dev", "pod-7", "-c", "app", "--", "ptyhub", "dial-stdio"}},
	}
	for _, c := range cases {
		tg, err := Resolve(c.spec, env(c.env...))
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		if !slices.Equal(tg.Argv, c.want) {
			t.Errorf("%s: argv %q, want %q", c.spec, tg.Argv, c.want)
		}
		if tg.Name != c.spec {
			t.Errorf("%s: name %q", c.spec, tg.Name)
		}
	}
}

// Specifications that would smuggle options into ssh, docker or kubectl, or that are
// not hosts at all, are refused.
func TestResolveRefuses(t *testing.T) {
	for _, spec := range []string{
		"", "ssh://-oProxyCommand=touch%20x", "ssh://me@-oProxyCommand=x", "ssh://-me@box",
		"ssh://me:secret@box", "ssh://box:0", "ssh://box:99999", "ssh://box/path", "ssh://box?x=1",
		"docker://-it", "docker://", "docker://a/b", "kube://-n/pod", "kube://a/b/c/d", "kube://",
		"ftp://box", "ssh://bo%20x",
	} {
		if tg, err := Resolve(spec, env()); err == nil || !errors.Is(err, ErrBadHost) {
			t.Errorf("%q: resolved to %q, %v; want ErrBadHost", spec, tg.Argv, err)
		}
	}
}

// Named hosts come from $XDG_CONFIG_HOME/ptyhub/hosts.json: a program with arguments, or
// a URL.
func TestResolveNamed(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "ptyhub"), 0o700)
	os.WriteFile(filepath.Join(dir, "ptyhub", "hosts.json"), []byte(`{"hosts": {
		"sandbox": {"program": "devcontainer", "args": ["exec", "--workspace-folder", "/w", "ptyhub", "dial-stdio"]},
		"box": {"url": "ssh://me@box:2200"},
		"bad": {"url": "ssh://box", "program": "x"}}}`), 0o600)
	e := env("XDG_CONFIG_HOME", dir)
	tg, err := Resolve("sandbox", e)
	if err != nil || !slices.Equal(tg.Argv, []string{"devcontainer", "exec", "--workspace-folder", "/w", "ptyhub", "dial-stdio"}) {
		t.Errorf("sandbox: %q %v", tg.Argv, err)
	}
	tg, err = Resolve("box", e)
	if err != nil || tg.Name != "box" || !slices.Equal(tg.Argv, []string{"ssh", "-p", "2200", "me@box", "--", "ptyhub", "dial-stdio"}) {
		t.Errorf("box: %+v %v", tg, err)
	}
	for _, n := range []string{"bad", "nowhere"} {
		if _, err := Resolve(n, e); err == nil || !strings.Contains(err.Error(), "hosts.json") {
			t.Errorf("%s: %v, want an error naming hosts.json", n, err)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	cases := map[string][]string{
		"":                              nil,
		"ssh":                           {"ssh"},
		"  ssh   -v  ":                  {"ssh", "-v"},
		`ssh -o "A=b c" 'd "e' f\ g`:    {"ssh", "-o", "A=b c", `d "e`, "f g"},
		`x "a\"b\\c" ''`:                {"x", `a"b\c`, ""},
		`x $HOME ~ *`:                   {"x", "$HOME", "~", "*"},
		"ssh -i /k\t-p 22\nhost":        {"ssh", "-i", "/k", "-p", "22", "host"},
		`ssh -o ProxyCommand="nc %h"`:   {"ssh", "-o", "ProxyCommand=nc %h"},
		`a'b'"c"d`:                      {"abcd"},
		`ssh -o 'UserKnownHostsFile=x'`: {"ssh", "-o", "UserKnownHostsFile=x"},
	}
	for in, want := range cases {
		got, err := SplitCommand(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`ssh 'x`, `ssh "x`} {
		if _, err := SplitCommand(in); err == nil {
			t.Errorf("SplitCommand(%q): no error", in)
		}
	}
}

// Ids route by the host before their last ':'; an id whose prefix names no host is this
// machine's (a session name may hold a ':').
func TestRoute(t *testing.T) {
	h := &Hosts{Options: Options{Getenv: env()}}
	r := &route.Router{Host: h.Host}
	cases := []struct{ id, host, rest string }{
		{"3", "", "3"},
		{"ssh://me@box:2222:3", "ssh://me@box:2222", "3"},
		{"docker://web-1:0198c0de", "docker://web-1", "0198c0de"},
		{"build:1", "", "build:1"},
		{":x", "", ":x"},
	}
	for _, c := range cases {
		m, rest, _ := r.Locate(context.Background(), c.id)
		host := ""
		if m != nil {
			host = m.Prefix
		}
		if host != c.host || rest != c.rest {
			t.Errorf("route(%q) = %q, %q; want %q, %q", c.id, host, rest, c.host, c.rest)
		}
	}
}
