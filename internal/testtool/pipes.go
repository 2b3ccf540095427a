package testtool

import (
	"io"
	"os"
	"os/exec"
	"syscall"
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

// StartOnTerminal starts cmd in a new session whose controlling terminal is tty (a pty's
// slave), on its standard input, as a program run from a terminal window is; and returns
// a pipe from its standard output. It fails t if it cannot. The caller waits for cmd.
func StartOnTerminal(t testing.TB, cmd *exec.Cmd, tty *os.File) (stdout io.ReadCloser) {
	t.Helper()
	cmd.Stdin = tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdout
}
