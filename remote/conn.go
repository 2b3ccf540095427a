package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxStderr is how much of the transport's stderr is kept (its last bytes) for errors.
const maxStderr = 8 << 10

// Conn is a net.Conn over a transport program's stdin and stdout. Its stderr is kept
// (the last 8 KiB) for error messages. Close ends the program (SIGTERM, then SIGKILL
// after 2 s) and waits for it.
type Conn struct {
	target Target
	cmd    *exec.Cmd
	stdin  *os.File // our end of the program's stdin
	stdout *os.File // our end of the program's stdout

	mu     sync.Mutex
	stderr []byte

	exited  chan struct{} // closed when the program has been waited for
	waitErr error         // set before exited is closed

	closeOnce sync.Once
}

// stderrBuf keeps the last maxStderr bytes written to it.
type stderrBuf struct{ c *Conn }

func (w stderrBuf) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	w.c.stderr = append(w.c.stderr, p...)
	if len(w.c.stderr) > maxStderr {
		w.c.stderr = w.c.stderr[len(w.c.stderr)-maxStderr:]
	}
	w.c.mu.Unlock()
	return len(p), nil
}

// Dial starts t's program in a session of its own (no controlling terminal: ssh then
// never stops the caller's terminal, and reads no password from it) with this process's
// environment, and returns the connection over its stdin and stdout. A program that
// cannot be started is an error at once; one that fails later shows in the first read
// (see Conn.Err).
func Dial(ctx context.Context, t Target) (*Conn, error) {
	if len(t.Argv) == 0 {
		return nil, fmt.Errorf("%w: host %s has no program", ErrBadHost, t.Name)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("remote: pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("remote: pipe: %w", err)
	}
	c := &Conn{target: t, stdin: inW, stdout: outR, exited: make(chan struct{})}
	cmd := exec.Command(t.Argv[0], t.Argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderrBuf{c}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	setPdeathsig(cmd.SysProcAttr)
	c.cmd = cmd
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("host %s: start %s: %w", t.Name, t.Argv[0], err)
	}
	// The waiter: owned by the Conn; ends when the program exits (Close makes it).
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// Read reads from the program's stdout.
func (c *Conn) Read(p []byte) (int, error) { return c.stdout.Read(p) }

// Write writes to the program's stdin.
func (c *Conn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// Close closes both pipes and ends the program: SIGTERM to it, SIGKILL after 2 s. It
// waits for the program to exit.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.stdin.Close()
		c.stdout.Close()
		select {
		case <-c.exited:
			return
		default:
		}
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(2 * time.Second):
			c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return nil
}

// Exited returns a channel closed when the transport program has exited.
func (c *Conn) Exited() <-chan struct{} { return c.exited }

// Stderr returns the last bytes the program wrote to its stderr.
func (c *Conn) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.TrimSpace(string(c.stderr))
}

// Err explains why the connection failed, once the program has exited or within wait:
// the program's exit status and stderr, translated for the common cases (ptyhub missing
// on the host, ssh failing). It returns nil if the program still runs after wait.
func (c *Conn) Err(wait time.Duration) error {
	select {
	case <-c.exited:
	case <-time.After(wait):
		return nil
	}
	code := -1
	var ee *exec.ExitError
	if errors.As(c.waitErr, &ee) {
		code = ee.ExitCode()
	} else if c.waitErr == nil {
		code = 0
	}
	stderr := c.Stderr()
	t := c.target
	lower := strings.ToLower(stderr)
	switch {
	case code == 127 || code == 126 && strings.Contains(lower, "ptyhub") ||
		strings.Contains(lower, "ptyhub") && (strings.Contains(lower, "not found") || strings.Contains(lower, "no such file")) ||
		strings.Contains(lower, "executable file not found"):
		return &Error{Host: t.Name, NotInstalled: true, Stderr: stderr,
			msg: fmt.Sprintf("ptyhub is not installed on host %s (or not on the PATH the remote command gets): %s", t.Name, t.Install)}
	case filepathBase(t.Argv[0]) == "ssh" && code == 255:
		return &Error{Host: t.Name, Stderr: stderr, msg: fmt.Sprintf("ssh to host %s failed: %s", t.Name, orNothing(stderr))}
	}
	return &Error{Host: t.Name, Stderr: stderr,
		msg: fmt.Sprintf("the connection to host %s ended (%s %s): %s", t.Name, t.Argv[0], exitText(c.waitErr), orNothing(stderr))}
}

func filepathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func orNothing(s string) string {
	if s == "" {
		return "it printed nothing on stderr"
	}
	return s
}

func exitText(err error) string {
	if err == nil {
		return "exited with status 0"
	}
	return err.Error()
}

// Error is a failed connection to a host.
type Error struct {
	Host string
	// NotInstalled: the host has no ptyhub the transport could run.
	NotInstalled bool
	// Stderr is what the transport program printed.
	Stderr string
	msg    string
}

func (e *Error) Error() string { return e.msg }

// LocalAddr implements net.Conn.
func (c *Conn) LocalAddr() net.Addr { return addr("local") }

// RemoteAddr implements net.Conn.
func (c *Conn) RemoteAddr() net.Addr { return addr(c.target.Name) }

// SetDeadline implements net.Conn.
func (c *Conn) SetDeadline(t time.Time) error {
	return errors.Join(c.stdout.SetReadDeadline(t), c.stdin.SetWriteDeadline(t))
}

// SetReadDeadline implements net.Conn.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.stdout.SetReadDeadline(t) }

// SetWriteDeadline implements net.Conn.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.stdin.SetWriteDeadline(t) }

type addr string

func (a addr) Network() string { return "command" }
func (a addr) String() string  { return string(a) }

var _ net.Conn = (*Conn)(nil)
