package reaper

import "github.com/ptyhub/ptyhub/proc"

// pids lists the pids of ps.
func pids(ps []proc.Info) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}
