package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// keyboardChildEnv makes the test binary run keyboardChild instead of the tests (TestMain
// checks it before building anything).
const keyboardChildEnv = "PTYHUB_TEST_OPEN_KEYBOARD"

// ptyhub attach opens its keyboard anew from the terminal on standard input, as a file
// that closing stops (one the runtime polls), and reads the keys typed there. Run with
// -tags ptyhub_portable this is the path macOS and FreeBSD take; if it cannot name the
// terminal, attach falls back to a blocking copy of standard input, and this fails.
func TestOpenKeyboard(t *testing.T) {
	t.Parallel()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), keyboardChildEnv+"=1")
	cmd.Stderr = os.Stderr
	out := bufio.NewReader(testtool.StartOnTerminal(t, cmd, slave))
	defer cmd.Wait()
	defer cmd.Process.Kill()
	opened, _ := out.ReadString('\n')
	if opened != "opened pollable\n" {
		t.Fatalf("openKeyboard on a terminal: %q, want a new, pollable open of the terminal", opened)
	}
	master.Write([]byte("key\n"))
	if read, _ := out.ReadString('\n'); read != "read key\n" {
		t.Fatalf("the keyboard read %q, want %q", read, "read key\n")
	}
}

// keyboardChild runs in the child of TestOpenKeyboard, on a terminal as its standard
// input: it opens the keyboard as attach does, says how ("opened pollable", "opened
// blocking" for the fallback, "nil"), then reads one line from it and prints "read LINE".
func keyboardChild() int {
	f := openKeyboard()
	if f == nil {
		os.Stdout.WriteString("nil\n")
		return 1
	}
	defer f.Close()
	// SetReadDeadline works only on a file the runtime polls: the reopened terminal, not
	// the blocking duplicate of standard input.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		os.Stdout.WriteString("opened blocking\n")
		return 1
	}
	os.Stdout.WriteString("opened pollable\n")
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		return 1
	}
	os.Stdout.WriteString("read " + strings.TrimSpace(line) + "\n")
	return 0
}
