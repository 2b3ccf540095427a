package reaper

import "github.com/ptyhub/ptyhub/proc"

// orphanCandidates lists the children of the reaper self that are not children of its
// spawning thread (the one OS thread that forks every leader): the orphans re-parented to
// it, and nothing else. The kernel keeps a child on the children list of the thread that
// forked it, and re-parents an orphan to the first live thread of the subreaper's thread
// group — its main thread, which the reaper's init holds for the process's life (the
// children of a thread that exits move there too). So the leaders (one per session
// alive) are all on the spawning thread's list and the orphans on the main thread's: one
// read of the main thread's children (proc.ThreadChildren), O(orphans), not O(sessions)
// nor O(threads). ok is false when it cannot tell (no spawning thread known, or it is the
// main thread, or no per-thread children lists here): the caller then lists every child.
func orphanCandidates(self, spawner int) (kids []int, ok bool) {
	if spawner <= 0 || spawner == self {
		return nil, false
	}
	orphanReads.RLock()
	defer orphanReads.RUnlock()
	return proc.ThreadChildren(self, self)
}
