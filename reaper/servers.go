package reaper

import "github.com/ptyhub/ptyhub/proc"

// EnvServer marks a per-user ptyhub server that a client started (value "1"): the client
// sets it in the server's environment at spawn, where the server's own processes do not
// pass it on (the server's sessions and its reaper get environments built without it).
//
// Such a server is the user's, not the session's that ran the client: a command in a
// session (`ptyhub exec --name web -- npm run dev`, or an agent's command in `ptyhub
// mcp`) autostarts the server of another socket, which is re-parented to the session's
// reaper once the client exits. A session's sweeps — the Linux reaper's walk of a
// session's descendants at its end and at shutdown, its rule for unmarked orphans, the
// portable table scan, the sweeps after a reaper's death — leave a recognised server
// and everything under it (its reaper, its sessions) alone; that server's own sessions
// are swept by that server.
//
// A server is recognised by what the sweeps read anyway, so the check is cheap: it leads
// its own session (the client starts it with setsid: its session id is its pid, from
// the stat the walk already reads), and only then its environment as at exec carries
// EnvServer=1 (one read of /proc/PID/environ, for session leaders only). What was not
// used: a file the server writes under its runtime directory names its pid and start
// time, but that directory is per socket and not known to another server's reaper; its
// command line says `serve` and /proc/PID/exe may be the reaper's own file, but a
// client may start another executable (an upgrade, a test binary) with other arguments.
//
// A session's process could forge the mark (set EnvServer=1, then setsid). That only
// lets it outlive its session, which it can do already by asking any service of the
// user to start it (systemd-run --user, at, cron, ssh to localhost, another ptyhub
// server): the mark never makes a sweep take a process it would not take otherwise.
// A server caught between its fork and its exec does not show the mark yet; it is then
// swept with the client that is starting it.
const EnvServer = "PTYHUB_SERVER"

// IsServer reports whether p is a ptyhub server a client started (see EnvServer): a
// session leader whose environment carries EnvServer=1. It reads p's environment only
// when p leads its session.
func IsServer(p proc.Info) bool {
	if p.PID <= 1 || p.Sid != p.PID || p.Dead() {
		return false
	}
	v, ok, _ := proc.LookupEnv(p.PID, EnvServer)
	return ok && v == "1"
}

// UnderServers returns the processes of table that a sweep leaves alone: every process
// isServer recognises (only session leaders are asked), its descendants, and the members
// of its session. It costs O(table) plus one isServer call per session leader.
func UnderServers(table []proc.Info, isServer func(proc.Info) bool) map[int]bool {
	var servers []int
	for _, p := range table {
		if p.Sid == p.PID && p.PID > 1 && !p.Dead() && isServer(p) {
			servers = append(servers, p.PID)
		}
	}
	if len(servers) == 0 {
		return nil
	}
	out := make(map[int]bool)
	byParent := make(map[int][]int, len(table))
	inServerSession := map[int]bool{}
	for _, pid := range servers {
		inServerSession[pid] = true
	}
	for _, p := range table {
		byParent[p.PPID] = append(byParent[p.PPID], p.PID)
		if inServerSession[p.Sid] {
			out[p.PID] = true
		}
	}
	seen := map[int]bool{}
	todo := servers
	for len(todo) > 0 {
		pid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out[pid] = true
		todo = append(todo, byParent[pid]...)
	}
	return out
}
