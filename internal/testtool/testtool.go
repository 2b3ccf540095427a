// Package testtool lets a test require the programs it runs. A missing one skips the
// test on a developer's machine and fails it in CI (CI=true), where .ci/run installs
// every program the tests need, so a skip can never hide a test that did not run.
package testtool

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Need returns when every program in progs is on PATH; otherwise it skips t, or fails it
// when CI=true.
func Need(t testing.TB, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			Missing(t, p+" is not installed")
		}
	}
}

// Path returns the path of prog on PATH; when it is missing it skips t, or fails it
// when CI=true.
func Path(t testing.TB, prog string) string {
	t.Helper()
	p, err := exec.LookPath(prog)
	if err != nil {
		Missing(t, prog+" is not installed")
	}
	return p
}

// NeedPython returns when python3 can import every module in mods; otherwise it skips t,
// or fails it when CI=true.
func NeedPython(t testing.TB, mods ...string) {
	t.Helper()
	Need(t, "python3")
	for _, m := range mods {
		if err := exec.Command("python3", "-c", "import "+m).Run(); err != nil {
			Missing(t, "the python3 module "+m+" is not installed")
		}
	}
}

// Python returns the path of the interpreter python3 on PATH runs, not of a wrapper that
// execs it (pyenv's shim is a bash script that execs pyenv, which execs python with
// variables of its own in the environment): a test that watches the process it starts
// (its environment, its execs) must start the interpreter itself. When python3 is
// missing it skips t, or fails it when CI=true.
func Python(t testing.TB) string {
	t.Helper()
	Need(t, "python3")
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	p := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(p) {
		t.Fatalf("python3 does not name its interpreter (sys.executable %q): %v", p, err)
	}
	return p
}

// Missing skips t saying why, or fails it when CI=true.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: .ci/run installs it; a missing tool fails instead of skipping)", why)
	}
	t.Skipf("%s: skipping", why)
}

// KernelOnly skips t, saying why, in a ptyhub_portable build: what it checks needs a path
// only the Linux build has. Elsewhere it returns.
func KernelOnly(t testing.TB, why string) {
	t.Helper()
	if Portable {
		t.Skipf("kernel-only (ptyhub_portable build): %s", why)
	}
}
