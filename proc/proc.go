// Package proc reads the facts ptyhub needs about other processes — state, parent,
// process group, session, controlling terminal, start time, children, one environment
// entry, the state of each thread and what a sleeping one is blocked in — and about this
// process (its binary, its open descriptors, the terminal on a descriptor), and owns the
// one sequence that ends a set of processes, and every signal to a process it found (see
// Signal). No other package reads /proc.
//
// Linux reads /proc; darwin and FreeBSD ask sysctl kern.proc (kern.procargs2 or
// kern.proc.env for another process's environment). Every reader is side-effect free and
// treats a process that vanishes while it is read as gone.
package proc

import (
	"errors"
	"syscall"
)

// ErrGone is returned for a process that does not exist (or no longer does).
var ErrGone = errors.New("proc: no such process")

// KeptMax is the most descriptors a Reader holds between Keep and Release: files of the
// processes it read, and one pidfd (Linux; a Reader elsewhere keeps none). A caller that
// keeps a Reader per session counts them in its descriptor budget.
const KeptMax = 9

// Info is one process's line of the process table.
type Info struct {
	PID, PPID int
	Pgid, Sid int
	// State is the scheduler state as a Linux-style letter: R running, S sleeping, D
	// disk sleep, T stopped, Z zombie, I idle.
	State byte
	// TTY is the device number of the controlling terminal, 0 for none.
	TTY uint64
	// Start identifies this incarnation of PID: two reads of the same process give the
	// same value, a reused pid a different one. 0 when unknown. Its unit is the OS's.
	Start uint64
	// Threads is the number of threads, 0 when the OS does not say.
	Threads int
	// CPU is the process's CPU time so far, in the OS's units (Linux: clock ticks;
	// BSD: microseconds), for telling whether it made progress between two reads.
	CPU uint64
}

// Dead reports whether the process has exited (a zombie or being torn down).
func (i Info) Dead() bool { return i.State == 'Z' || i.State == 'X' }

// Asleep reports whether the process sleeps (interruptibly) rather than runs, waits on
// disk, or is stopped.
func (i Info) Asleep() bool { return i.State == 'S' || i.State == 'I' }

// Stat reads one process. It returns ErrGone when pid does not exist.
func Stat(pid int) (Info, error) { return stat(pid) }

// StartTime returns pid's start identifier (see Info.Start), 0 when it is gone or a
// zombie.
func StartTime(pid int) uint64 {
	i, err := stat(pid)
	if err != nil || i.Dead() {
		return 0
	}
	return i.Start
}

// Children returns the direct children of pid (of all its threads). A vanished pid has
// none.
func Children(pid int) []int { return children(pid) }

// ThreadChildren returns the children forked by thread tid of process pid (the children
// of one thread, not of the whole process: a subreaper's orphans land on its main
// thread's list). ok is false when the OS or this kernel keeps no per-thread list
// (darwin, FreeBSD, Linux without CONFIG_PROC_CHILDREN) or pid is gone.
func ThreadChildren(pid, tid int) (kids []int, ok bool) { return threadChildren(pid, tid) }

// List reads the whole process table; processes that vanish while it reads are skipped.
func List() []Info { return list() }

// Getenv returns the value of key in pid's environment as it was at exec (what
// /proc/PID/environ or KERN_PROCARGS2 show), ok false when absent or unreadable.
func Getenv(pid int, key string) (string, bool) {
	v, ok, _ := LookupEnv(pid, key)
	return v, ok
}

// LookupEnv is Getenv that also says whether the answer is final: read is false when the
// environment could not be read or came back empty for a reason that may pass (a
// process between fork and exec, or in the middle of an exec, shows none for a moment),
// so that a miss is worth trying again. Where the OS tells (Linux), a process that will
// never show one — a kernel thread, another user's process — is read, without key.
func LookupEnv(pid int, key string) (v string, ok, read bool) {
	block, read := environ(pid)
	if !read || len(block) == 0 {
		return "", false, read
	}
	v, ok = lookupEnv(block, key)
	return v, ok, true
}

// CommandLine returns pid's command line joined by spaces and shortened to about 200
// bytes, for reports; "" when unreadable.
func CommandLine(pid int) string {
	s := commandLine(pid)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// ThreadStates returns the state letter of each thread of pid (see Info.State); ok is
// false where the OS does not give per-thread states.
func ThreadStates(pid int) (states []byte, ok bool) { return threadStates(pid) }

// Tree answers "children of pid" for a walk over many processes: it may read the whole
// process table once (where the OS has no per-process children list) and reuse it.
type Tree struct {
	byParent map[int][]int // set once a full scan ran
}

// Children returns the children of pid as of the walk.
func (t *Tree) Children(pid int) []int {
	if t.byParent == nil {
		if kids, ok := fastChildren(pid); ok {
			return kids
		}
		t.byParent = map[int][]int{}
		for _, p := range list() {
			t.byParent[p.PPID] = append(t.byParent[p.PPID], p.PID)
		}
	}
	return t.byParent[pid]
}

// ExitStatus reads the wait status of a zombie (an exited process its parent has not
// reaped) without reaping it. ok is false when pid is not a zombie or the status is not
// readable (Linux shows it only to a process with ptrace access to pid).
func ExitStatus(pid int) (ws syscall.WaitStatus, ok bool) { return exitStatus(pid) }

// CanReadExitStatus reports whether this process may read pid's exit status with
// ExitStatus once pid is a zombie. On Linux that takes ptrace read access to pid (the
// kernel shows 0 as every exit code without it), the access /proc/PID/environ also
// requires; elsewhere it is whether pid can be read at all.
func CanReadExitStatus(pid int) bool { return canReadExitStatus(pid) }
