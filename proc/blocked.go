package proc

import "time"

// The kernel's view of what a sleeping thread is blocked in, for the waiting-for-input
// detector: the system call and its arguments, the fds it waits on, its timeout, its CPU
// time, and what an open fd is. Linux (without the ptyhub_portable tag) has it through
// /proc/PID/task/TID/syscall, /proc/PID/mem, /proc/PID/fdinfo and /proc/PID/fd;
// elsewhere SyscallView is false and every reader answers "cannot tell".

// Call is the kind of system call a thread is blocked in.
type Call uint8

// Kinds of Call.
const (
	// CallOther: blocked in another system call (a child, a timer, a sleep), outside one
	// (a page fault), or gone.
	CallOther Call = iota
	// CallUnknown: the thread cannot be looked at (a setuid program), or the fds it
	// waits on cannot be read.
	CallUnknown
	// CallRunning: the thread is running after all.
	CallRunning
	// CallRead: read(2) or readv(2) on Blocked.FD.
	CallRead
	// CallMultiplex: select, poll or epoll waiting for input on Blocked.FDs.
	CallMultiplex
)

// NoTimeout is Blocked.Timeout of a wait without one.
const NoTimeout time.Duration = -1

// Blocked is what one thread is blocked in.
type Blocked struct {
	Call Call
	FD   int   // CallRead: the fd read
	FDs  []int // CallMultiplex: the fds waited on for input (POLLIN/POLLPRI, EPOLLIN/EPOLLPRI)
	// Timeout is CallMultiplex's timeout, NoTimeout for none. An unreadable timeout
	// counts as 0 (a wait about to end), so that it is looked at again.
	Timeout time.Duration
}

// FDKind is what an open fd of a process is.
type FDKind uint8

// Kinds of FDKind.
const (
	FDOther   FDKind = iota // a file, a directory, another device, or gone
	FDUnknown               // not allowed to look
	FDSocket
	FDPipe    // a pipe or FIFO; FD.Dev and FD.Ino identify it
	FDDevTTY  // /dev/tty, the controlling terminal of whoever opens it
	FDPtmx    // the master side of a pseudo-terminal
	FDCharDev // another character device; FD.Rdev is its device number
)

// FD is one open fd of a process.
type FD struct {
	Kind     FDKind
	Dev, Ino uint64 // of the inode (FDPipe)
	Rdev     uint64 // the device number (FDCharDev)
}

// SyscallView says whether this build has the kernel's view of blocked threads. Where it
// is false, ThreadBlocked answers CallUnknown, FDKind FDUnknown, ThreadRuntime, FDs and
// PtyPeer ok=false, and DupFD an error.
const SyscallView = syscallView

// ThreadBlocked reads what thread tid of process pid is blocked in, and for a select,
// poll or epoll wait the fds and the timeout it waits with (reading the process's memory
// or the epoll instance's fdinfo). It changes nothing.
func (r *Reader) ThreadBlocked(pid, tid int) Blocked { return r.threadBlocked(pid, tid) }

// ThreadRuntime reads the CPU time of thread tid of process pid, in nanoseconds.
func (r *Reader) ThreadRuntime(pid, tid int) (uint64, bool) { return r.threadRuntime(pid, tid) }

// FD says what fd of process pid is.
func (r *Reader) FD(pid, fd int) FD { return fdOf(pid, fd) }

// FDs lists what each open fd of process pid is; ok is false when the list cannot be
// read (gone, or not allowed).
func (r *Reader) FDs(pid int) (fds []FD, ok bool) { return fdsOf(pid) }

// PtyPeer returns the device number of the slave of the pty master open as fd in process
// pid.
func (r *Reader) PtyPeer(pid, fd int) (rdev uint64, ok bool) { return ptyPeer(pid, fd) }

// DupFD returns a copy, in this process, of fd of process pid (close-on-exec); the caller
// closes it. It needs ptrace access to pid. Between Keep and Release the Reader keeps the
// pidfd it opened for pid, for the next copy from the same process.
func (r *Reader) DupFD(pid, fd int) (int, error) { return r.dupFD(pid, fd) }
