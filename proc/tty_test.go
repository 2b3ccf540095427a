package proc

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// TerminalPath names the controlling terminal open on standard input so that it can be
// opened anew (as ptyhub attach opens its keyboard), on every backend: a child started on
// a pty as its controlling terminal writes through the path it was given, and the
// master reads it. A path given for a terminal that is not the controlling one is that
// terminal's; what is not a terminal is refused.
func TestTerminalPath(t *testing.T) {
	if os.Getenv("PTYHUB_TEST_TERMINAL_PATH") == "1" {
		terminalPathChild()
		return
	}
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTerminalPath$")
	cmd.Env = append(os.Environ(), "PTYHUB_TEST_TERMINAL_PATH=1")
	cmd.Stderr = os.Stderr
	line, _ := bufio.NewReader(testtool.StartOnTerminal(t, cmd, slave)).ReadString('\n')
	if err := cmd.Wait(); err != nil || !strings.HasPrefix(line, "path ") {
		t.Fatalf("TerminalPath(0) on the controlling terminal: %q, %v", line, err)
	}
	buf := make([]byte, 8)
	if n, err := master.Read(buf); err != nil || string(buf[:n]) != "x" {
		t.Fatalf("the reopened terminal %s is not the same one: read %q, %v", strings.TrimSpace(line[5:]), buf[:n], err)
	}

	if p, err := TerminalPath(int(slave.Fd())); err == nil && p != slave.Name() {
		t.Fatalf("TerminalPath of a pty that is not the controlling terminal = %q, want %q or an error", p, slave.Name())
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if p, err := TerminalPath(int(r.Fd())); err == nil {
		t.Fatalf("TerminalPath of a pipe = %q, want an error", p)
	}
}

// terminalPathChild runs in the child of TestTerminalPath: it names its standard input,
// writes "x" through that path, and prints "path P" (or the error) on standard output.
func terminalPathChild() {
	p, err := TerminalPath(0)
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	f.Write([]byte("x"))
	f.Close()
	os.Stdout.WriteString("path " + p + "\n")
	os.Exit(0)
}
