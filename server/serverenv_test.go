package server

import (
	"slices"
	"testing"

	"github.com/ptyhub/ptyhub/reaper"
)

// TestServerEnv: a server started from a session's command carries neither that
// session's marker nor credentials, and carries the server mark once.
func TestServerEnv(t *testing.T) {
	in := []string{"PATH=/bin", reaper.EnvSession + "=some-session", reaper.EnvServer + "=0", "GITHUB_TOKEN=x", "HOME=/h"}
	got := serverEnv(in)
	want := []string{"PATH=/bin", "HOME=/h", reaper.EnvServer + "=1"}
	if !slices.Equal(got, want) {
		t.Errorf("serverEnv(%q) = %q, want %q", in, got, want)
	}
}
