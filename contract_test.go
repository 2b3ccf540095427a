package ptyhub_test

import (
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// TestPipeControlKeys: on a pipe session (tty false) ^C and ^\ signal the process group
// and ^D closes stdin, as a terminal's line discipline would; the bytes are not written.
func TestPipeControlKeys(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	off := new(false)
	t.Run("ctrl-c", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, YieldTimeMs: ms(10000), WaitFor: "READY",
			Argv: []string{"python3", "-u", "-c", "import time\ntry:\n    print('READY')\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    print('INTERRUPTED')\n"}})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\u0003", YieldTimeMs: ms(10000)})
		out, r := untilExit(t, c, r)
		if !strings.Contains(out, "INTERRUPTED") || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("^C on pipes: output %q, exit %v %q", out, r.ExitCode, r.Signal)
		}
	})
	t.Run("keys C-c", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, Cmd: "sleep 60", YieldTimeMs: ms(0)})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Keys: []string{"C-c"}, YieldTimeMs: ms(10000)})
		_, r = untilExit(t, c, r)
		if r.Signal != "SIGINT" {
			t.Errorf("keys C-c on pipes: exit %v %q, want SIGINT", r.ExitCode, r.Signal)
		}
	})
	t.Run("ctrl-backslash", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, Cmd: "sleep 60", YieldTimeMs: ms(0)})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\u001c", YieldTimeMs: ms(10000)})
		_, r = untilExit(t, c, r)
		if r.Signal != "SIGQUIT" {
			t.Errorf("^\\ on pipes: exit %v %q, want SIGQUIT", r.ExitCode, r.Signal)
		}
	})
	t.Run("ctrl-d", func(t *testing.T) {
		t.Parallel()
		r := exec(t, c, session.ExecRequest{TTY: off, Cmd: "wc -c", YieldTimeMs: ms(0)})
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "abc\u0004", YieldTimeMs: ms(10000)})
		out, r := untilExit(t, c, r)
		if strings.TrimSpace(out) != "3" || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("^D on pipes: output %q, exit %v %q; want 3 bytes counted and exit 0", out, r.ExitCode, r.Signal)
		}
	})
}
