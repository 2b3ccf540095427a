package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// The CLI words the engine's results and errors with its own commands, never the MCP
// tools': a cut range is read with ptyhub read, and a session that exited with unread
// output is polled with ptyhub write.
func TestCLIWords(t *testing.T) {
	t.Parallel()
	n := 10
	r := session.Result{SessionID: "7", State: session.StateExited, ExitCode: &n, OriginalTokenCount: &n,
		TruncatedRange: &[2]int64{1200, 98000}, ReturnedBecause: session.BecauseExit}
	if text := r.TextIn(cliWords); !strings.Contains(text, "ptyhub read 7 --from 1200 --to 98000") || strings.Contains(text, "read_output") {
		t.Errorf("a cut result in the CLI's words:\n%s", text)
	}
	var stderr bytes.Buffer
	fail(&stderr, "write", fmt.Errorf("%w: session 7 (cat) exited with code 0; nothing was written; %s", session.ErrExited, session.ExitedUnread))
	if msg := stderr.String(); !strings.Contains(msg, "'ptyhub write ID' without text") || strings.Contains(msg, "write_stdin") {
		t.Errorf("a write refused with unread output: %q", msg)
	}
}
