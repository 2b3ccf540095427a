//go:build linux

// Package schedslice sets the time slice that Linux's fair scheduler (EEVDF, Linux 6.12
// and later) gives a thread: sched_setattr's sched_runtime for SCHED_OTHER and
// SCHED_BATCH threads. A thread made by another (a goroutine's new OS thread, a forked
// child, a program it executes) inherits its slice. Older kernels ignore the setting.
package schedslice

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Set sets the slice of thread tid (0: the calling thread) to d, clamped by the kernel to
// 0.1–100 ms; d = 0 gives the thread the kernel's default slice back. The thread keeps its
// policy, nice value and reset-on-fork flag; a thread of another policy (real-time,
// deadline, idle) is left alone. Two system calls.
func Set(tid int, d time.Duration) error {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return err
	}
	if a.Policy != unix.SCHED_NORMAL && a.Policy != unix.SCHED_BATCH {
		return nil
	}
	want := uint64(max(d, 0))
	if a.Runtime == want {
		return nil
	}
	set := unix.SchedAttr{
		Size:    unix.SizeofSchedAttr,
		Policy:  a.Policy,
		Flags:   a.Flags & unix.SCHED_FLAG_RESET_ON_FORK,
		Nice:    a.Nice,
		Runtime: want,
	}
	return unix.SchedSetAttr(tid, &set, 0)
}

// SetProcess sets the slice of every thread of this process to d (see Set). It goes
// over the process's threads twice, so that a thread made during the first pass by one
// not yet set is found; threads made afterwards inherit d from the thread that makes
// them. It returns the first error.
func SetProcess(d time.Duration) error {
	var first error
	for range 2 {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := Set(tid, d); err != nil && first == nil && err != unix.ESRCH {
				first = err
			}
		}
	}
	return first
}
