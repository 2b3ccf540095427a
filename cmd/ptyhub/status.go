package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ptyhub/ptyhub/server"
)

const statusHelp = `Usage:
  ptyhub status [--json]

Prints the health of the per-user server: its sessions by state (running, ended and kept
as history), the session limit of one client, the file descriptors it has open and its
limit (RLIMIT_NOFILE), its resident memory, its connections and uptime; then the same
for each agent's ptyhub mcp, which runs that agent's sessions. It does not start a
server.
`

func runStatus(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("status", statusHelp)
	asJSON := fs.Bool("json", false, "print JSON")
	socket := socketFlag(fs)
	pos, code, done := fs.parseMixed(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, "status", "takes no arguments")
	}
	c, err := server.Dial(ctx, server.DialOptions{Socket: *socket, AutoStart: false, Name: "status", Warn: noteOnce})
	if err != nil {
		return fail(stderr, "status", err)
	}
	defer c.Close(ctx, true)
	st, err := c.Status(ctx)
	if err != nil {
		return fail(stderr, "status", err)
	}
	if *asJSON {
		printJSON(stdout, st)
		return 0
	}
	limit := "unlimited"
	if st.FDLimit > 0 {
		limit = fmt.Sprint(st.FDLimit)
	}
	fmt.Fprintf(stdout, "server     pid %d, %s, up %s, %s\n", st.PID, st.Version, (time.Duration(st.UptimeMs) * time.Millisecond).Round(time.Second), plural(st.Connections, "connection"))
	fmt.Fprintf(stdout, "sessions   %d running, %d ended (history), in %s; limit %d running per client\n", st.Running, st.Exited, plural(st.Pools, "pool"), st.MaxSessions)
	fmt.Fprintf(stdout, "fds        %d open of %s (RLIMIT_NOFILE)\n", st.FDs, limit)
	fmt.Fprintf(stdout, "memory     %.1f MiB resident\n", float64(st.RSSBytes)/(1<<20))
	for _, h := range st.Hosts {
		fmt.Fprintf(stdout, "agent      ptyhub mcp pid %d: %d running, %d ended; %d fds; %.1f MiB resident\n",
			h.PID, h.Running, h.Exited, h.FDs, float64(h.RSSBytes)/(1<<20))
	}
	return 0
}

// plural is "1 thing" or "N things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
