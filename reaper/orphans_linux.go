package reaper

import (
	"os"
	"strconv"
	"strings"
)

// orphanCandidates lists the children of the reaper self that are not children of its
// spawning thread (the one OS thread that forks every leader): the orphans re-parented to
// it, and nothing else. The kernel re-parents an orphan to the first live thread of the
// subreaper's thread group (its main thread), never to a thread chosen by who forked,
// and keeps a child on the list of the thread that forked it, so the leaders (one per
// session alive) are all on the spawning thread's list and this costs O(orphans), not
// O(sessions). ok is false when it cannot tell (no spawning thread known, no children
// files): the caller then lists every child.
func orphanCandidates(self, spawner int) (kids []int, ok bool) {
	if spawner <= 0 || spawner == self {
		return nil, false
	}
	dir := "/proc/" + strconv.Itoa(self) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	sp := strconv.Itoa(spawner)
	seen := false
	for _, task := range tasks {
		if task.Name() == sp {
			seen = true
			continue
		}
		b, err := os.ReadFile(dir + task.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				if _, serr := os.Stat(dir + task.Name()); serr == nil {
					return nil, false // no children files in this kernel
				}
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				kids = append(kids, n)
			}
		}
	}
	// The spawning thread is gone (the reaper is shutting down): its children moved.
	return kids, seen
}
