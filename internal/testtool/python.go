package testtool

import (
	"os/exec"
	"strings"
	"testing"
)

// PythonBinary returns the python3 interpreter itself (its sys.executable), not a
// launcher found first on PATH (pyenv's shim is a script that sets environment
// variables and execs the interpreter): for a test that starts it with an environment
// of its own choosing. A missing python3 skips t, or fails it when CI=true.
func PythonBinary(t testing.TB) string {
	t.Helper()
	Need(t, "python3")
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	p := strings.TrimSpace(string(out))
	if err != nil || p == "" {
		t.Fatalf("python3 does not say where its interpreter is: %v", err)
	}
	return p
}
