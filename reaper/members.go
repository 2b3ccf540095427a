package reaper

import (
	"sync"

	"github.com/ptyhub/ptyhub/proc"
)

// orphanReads is read-held while orphanCandidates reads the reaper's children list and
// held by the reaper's loop that reaps orphans: the kernel builds that list one entry at
// a time, and a child reaped between two entries makes it skip the entry that follows
// (a live orphan missing from a scan). Lock order: helper.mu, then orphanReads.
var orphanReads sync.RWMutex

// pids lists the pids of ps.
func pids(ps []proc.Info) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}
