package proc

import (
	"os"
	"testing"

	"github.com/creack/pty"
)

// TerminalPath names the terminal open on a descriptor, so that it can be opened anew
// (as ptyhub attach opens its keyboard), and refuses what is not a terminal.
func TestTerminalPath(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	p, err := TerminalPath(int(slave.Fd()))
	if err != nil {
		t.Fatalf("TerminalPath of a pty: %v", err)
	}
	if p != slave.Name() {
		t.Fatalf("TerminalPath = %q, want %q", p, slave.Name())
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	f.Close()
	buf := make([]byte, 8)
	if n, err := master.Read(buf); err != nil || string(buf[:n]) != "x" {
		t.Fatalf("the reopened terminal is not the same one: read %q, %v", buf[:n], err)
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
