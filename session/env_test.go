package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/reaper"
)

// The environments of a caller's sessions are built from one shared base per world:
// each request's variables, PTYHUB_SESSION and directory are its own, and never reach
// the base or the next session's environment.
func TestEnvWorldsIndependent(t *testing.T) {
	t.Parallel()
	m, err := NewManager(Options{NoRecord: true, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	dir := t.TempDir()
	caller := Caller{Dir: dir, Env: []string{"PATH=/bin", "LANG=de_DE.UTF-8", "PATH=/usr/bin", "TERM=dumb", "PWD=/old"}}
	c, err := m.NewClientFor("t", caller)
	if err != nil {
		t.Fatal(err)
	}
	world := func(req ExecRequest, profile, id string) []string {
		t.Helper()
		_, env, err := startWorld(&req, c.caller, &c.worlds, profile, id)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	agent := []string{"PATH=/usr/bin", "LANG=de_DE.UTF-8", "TERM=xterm-256color", "PWD=" + dir,
		"NO_COLOR=1", "CARGO_TERM_PROGRESS_WHEN=never", "PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat",
		"MANPAGER=cat", "SYSTEMD_PAGER=", "AWS_PAGER="}
	steps := []struct {
		req     ExecRequest
		profile string
		want    []string
	}{
		{ExecRequest{Env: map[string]string{"B": "2", "A": "1", "TERM": "vt100"}}, ProfileAgent,
			append(slices.Clone(agent), "A=1", "B=2")},
		{ExecRequest{}, ProfileAgent, agent},
		{ExecRequest{Env: map[string]string{"PTYHUB_SESSION": "mine", "PWD": "/x"}}, ProfileAgent, agent},
		{ExecRequest{}, ProfilePlain, []string{"PATH=/usr/bin", "LANG=de_DE.UTF-8", "TERM=xterm-256color", "PWD=" + dir}},
		{ExecRequest{ClearEnv: true}, ProfilePlain, []string{"TERM=xterm-256color"}},
		{ExecRequest{Workdir: "/"}, ProfilePlain, []string{"PATH=/usr/bin", "LANG=de_DE.UTF-8", "TERM=xterm-256color", "PWD=/"}},
		{ExecRequest{}, ProfileAgent, agent},
	}
	for i, st := range steps {
		id := fmt.Sprintf("uuid-%d", i)
		want := slices.Clone(st.want)
		switch i {
		case 0:
			want[2] = "TERM=vt100" // the request's value, in the caller's place
		case 2:
			want[3] = "PWD=/x"
		}
		want = append(want, "PTYHUB_SESSION="+id)
		if got := world(st.req, st.profile, id); !slices.Equal(got, want) {
			t.Errorf("step %d (%+v, %s):\n got %q\nwant %q", i, st.req, st.profile, got, want)
		}
	}
	if _, _, err := startWorld(&ExecRequest{Env: map[string]string{"1X": "y"}}, c.caller, &c.worlds, ProfileAgent, "u"); err == nil {
		t.Error("an invalid variable name was accepted")
	}
}

// A start in a world seen before copies its environment instead of building it again
// (an index of every variable, a list of them).
func TestEnvWorldBuiltOnce(t *testing.T) {
	m, err := NewManager(Options{NoRecord: true, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	var env []string
	for i := range 200 {
		env = append(env, fmt.Sprintf("VAR_%d=value %d", i, i))
	}
	c, err := m.NewClientFor("t", Caller{Dir: t.TempDir(), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	req := &ExecRequest{Argv: []string{"true"}}
	start := func() {
		if _, _, err := startWorld(req, c.caller, &c.worlds, ProfileAgent, "0190f5c2-0000-7000-8000-000000000000"); err != nil {
			t.Fatal(err)
		}
	}
	start()
	// The directory's stat, the session's own list and its PTYHUB_SESSION: 5 here;
	// building the base again costs 26 more (its index's groups), and before the bases
	// were shared a start allocated an entry per variable too (over 200). Naming the
	// directory for an error message that is not made cost 4.
	if n := testing.AllocsPerRun(20, start); n > 6 {
		t.Errorf("a start in a known world allocates %.0f times with 200 caller variables, want at most 6", n)
	}
}

// TestEnvDropsServerMark: a session started by a server (whose own environment carries
// the mark a client set at its start) does not carry it, or a process of the session
// would look like a server to the sweeps.
func TestEnvDropsServerMark(t *testing.T) {
	b := newEnvBase([]string{"PATH=/bin", reaper.EnvServer + "=1"}, "/", "", false)
	env, err := b.with(nil, "u")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, reaper.EnvServer+"=") {
			t.Errorf("the session's environment %q carries %s", env, kv)
		}
	}
}
