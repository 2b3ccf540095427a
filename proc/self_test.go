package proc

import (
	"os"
	"slices"
	"testing"
)

// OpenFDs lists a descriptor while it is open and not once it is closed; Executable
// opens the binary this process runs.
func TestSelfFacts(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fd := int(w.Fd())
	if fds := OpenFDs(); !slices.Contains(fds, fd) {
		t.Errorf("OpenFDs() = %v, no open pipe %d", fds, fd)
	}
	r.Close()
	w.Close()
	if fds := OpenFDs(); slices.Contains(fds, fd) {
		t.Errorf("OpenFDs() = %v still lists the closed pipe %d", fds, fd)
	}

	want, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.Stat(Executable())
	if err != nil {
		t.Fatalf("Executable() = %q: %v", Executable(), err)
	}
	b, err := os.Stat(want)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(a, b) {
		t.Errorf("Executable() = %q is not this test binary %q", Executable(), want)
	}
	if ExecutableReplaced() {
		t.Errorf("ExecutableReplaced() = true for the test binary in place at %q", want)
	}
}
