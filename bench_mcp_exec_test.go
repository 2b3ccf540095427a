package ptyhub_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// benchCallerClient is a client of a new manager made with opts, for this process as the
// caller (as ptyhub mcp's own client is); the manager is closed at the end of b.
func benchCallerClient(b *testing.B, opts session.Options) *session.Client {
	caller, err := session.Here()
	if err != nil {
		b.Fatal(err)
	}
	m, err := session.NewManager(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close(context.Background()) })
	client, err := m.NewClientFor("bench", caller)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// BenchmarkMCPExecTrue: exec_command of /bin/true, then kill_session {remove: true} of
// its session (as cmd/ptyhub-bench does), as ptyhub mcp serves them, end to end in this
// process: request lines in through the stdio transport, the MCP SDK, the tool handlers,
// the session's start (environment, pty, the spawn round trip to the reaper), its exit
// path and removal, the response lines out. The client is made as ptyhub mcp makes its
// own (session.Here: the caller's directory and environment). Its B/op and allocs/op
// are what ptyhub allocates for one exec and its removal, the reaper's process aside
// (the client's own decoding is not counted: the lines are written and read as bytes).
// The transcripts go to a fresh state directory under $XDG_STATE_HOME or
// ~/.local/state, where the bench keeps them (see BENCHMARKS.md); NOREC=1 turns them off.
func BenchmarkMCPExecTrue(b *testing.B) {
	client := benchCallerClient(b, session.Options{StateDir: benchStateDir(b), NoRecord: os.Getenv("NOREC") != ""})
	call := benchMCP(b, client)
	idRE := regexp.MustCompile(`"session_id":"([^"]+)"`)
	n := 1
	exec := func() {
		r := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"exec_command","arguments":{"argv":["/bin/true"],"yield_time_ms":30000}}}`, n))
		id := idRE.FindStringSubmatch(r)
		if id == nil || !strings.Contains(r, `"exit_code":0`) {
			b.Fatalf("exec: %s", r)
		}
		r = call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"kill_session","arguments":{"session_id":%q,"remove":true}}}`, n+1, id[1]))
		if !strings.Contains(r, "removed") {
			b.Fatalf("kill_session: %s", r)
		}
		n += 2
	}
	for range 5 { // the reaper started, the pools warm
		exec()
	}
	b.ReportAllocs()
	for b.Loop() {
		exec()
	}
}

// benchStateDir is a fresh state directory beside a user's ($XDG_STATE_HOME, else
// ~/.local/state), removed when b ends: creating files under /tmp costs far more on some
// hosts (see BENCHMARKS.md).
func benchStateDir(b *testing.B) string {
	parent := os.Getenv("XDG_STATE_HOME")
	if parent == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return b.TempDir()
		}
		parent = home + "/.local/state"
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "ptyhub-bench-")
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
