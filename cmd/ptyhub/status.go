package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/ptyhub/ptyhub/server"
)

const statusHelp = `Usage:
  ptyhub status [--json]

Prints the health of the per-user server: its sessions by state (running, ended and kept
as history), the session limit of one client, the file descriptors it has open and its
limit (RLIMIT_NOFILE), its resident memory, its connections and uptime; then the same
for each agent's ptyhub mcp, which runs that agent's sessions. It does not start a
server on this machine. With --host (or $PTYHUB_HOST) it shows the server of that host
(which 'ptyhub dial-stdio' starts there if none runs).
`

func runStatus(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("status", statusHelp)
	asJSON := fs.Bool("json", false, "print JSON")
	socket := serverFlags(fs)
	if _, code, done := fs.parseArgs(args, 0, "takes no arguments", stdout, stderr); done {
		return code
	}
	o, err := socket.options(ctx, "status", false)
	if err != nil {
		return fail(stderr, "status", err)
	}
	c, err := server.Dial(ctx, o)
	if err != nil {
		if o.Dialer == nil && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)) {
			sock := o.Socket
			if sock == "" {
				sock = server.SocketPath()
			}
			fmt.Fprintf(stderr, "ptyhub status: no ptyhub server is running on %s\n", sock)
			return exitError
		}
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
