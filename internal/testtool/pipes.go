package testtool

import (
	"io"
	"os/exec"
	"testing"
)

// StartPiped starts cmd with a pipe to its standard input and one from its standard
// output, and returns their ends; it fails t if it cannot. The caller ends cmd and waits
// for it.
func StartPiped(t testing.TB, cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err = cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, stdout
}
