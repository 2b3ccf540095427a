package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// initWork lists ptyhub's own packages that may do work while the program starts, with
// the reason. Go runs the initialisation of every package linked into the binary before
// main, for every command, so `ptyhub version` pays for the tables of `ptyhub mcp` and
// the server: a package-level table that only some command needs is built on first use
// instead (sync.Once), and a package that needs none stays off this list.
var initWork = map[string]string{
	"main":                               "the command table",
	"github.com/ptyhub/ptyhub/broadcast": "a closed channel shared by every hub",
	"github.com/ptyhub/ptyhub/proc":      "device numbers of /dev/tty and /dev/ptmx",
	"github.com/ptyhub/ptyhub/reaper":    "the hook that turns the re-executed binary into a reaper",
	"github.com/ptyhub/ptyhub/screen":    "a closed channel",
	"github.com/ptyhub/ptyhub/server":    "the registry of the wire operations",
	"github.com/ptyhub/ptyhub/session":   "sync.OnceValue closures, the retention map, the read buffers' pool",
	"github.com/ptyhub/ptyhub/truncate":  "the token counter's sync.OnceValue",
}

// TestStartInitWork runs `ptyhub version` with GODEBUG=inittrace=1, which prints a line
// for each package whose initialisation does work, and fails for a ptyhub package not in
// initWork: a table built at start that could be built on first use. (An entry may do
// no work in some builds: proc's device numbers are not linked with ptyhub_portable.)
func TestStartInitWork(t *testing.T) {
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ptyhub version: %v\n%s", err, stderr.String())
	}
	var got []string
	for line := range strings.SplitSeq(stderr.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		if pkg := f[1]; pkg == "main" || strings.HasPrefix(pkg, "github.com/ptyhub/ptyhub/") {
			got = append(got, pkg)
		}
	}
	if len(got) == 0 {
		t.Fatalf("GODEBUG=inittrace=1 printed no init line of ptyhub's packages:\n%s", stderr.String())
	}
	for _, pkg := range got {
		if _, ok := initWork[pkg]; !ok {
			t.Errorf("package %s does work while every command starts (%s); build what it builds on first use, or list it in initWork with the reason",
				pkg, initLine(stderr.String(), pkg))
		}
	}
}

// initLine returns the inittrace line of pkg in trace, without the "init pkg" prefix.
func initLine(trace, pkg string) string {
	for line := range strings.SplitSeq(trace, "\n") {
		if rest, ok := strings.CutPrefix(line, "init "+pkg+" "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}
