//go:build linux && !ptyhub_portable

package proc

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

const syscallView = true

var (
	devTTY  = unix.Mkdev(5, 0)
	devPtmx = unix.Mkdev(5, 2)
)

// threadBlocked reads /proc/PID/task/TID/syscall: "running", or the syscall number and
// its six arguments in hex.
func (r *Reader) threadBlocked(pid, tid int) Blocked {
	b, ok := r.read("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/syscall")
	if !ok {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid)); err != nil {
			return Blocked{Call: CallOther} // gone
		}
		return Blocked{Call: CallUnknown} // not allowed to look (a setuid program)
	}
	var f [7][]byte // parsed in place: the probe reads this file for every thread it checks
	n := fields(b, f[:])
	if n == 0 || string(f[0]) == "running" {
		return Blocked{Call: CallRunning}
	}
	nr, ok := decimal(f[0]) // "-1": blocked outside a syscall
	if !ok || n < 7 {
		return Blocked{Call: CallOther} // blocked outside a syscall (e.g. a page fault)
	}
	var args [6]uint64
	for i := range args {
		args[i], _ = parseUint(bytes.TrimPrefix(f[i+1], []byte("0x")), 16)
	}
	multiplex := func(fds []int, timeout time.Duration) Blocked {
		return Blocked{Call: CallMultiplex, FDs: fds, Timeout: timeout}
	}
	switch nr {
	case unix.SYS_READ, unix.SYS_READV:
		return Blocked{Call: CallRead, FD: int(args[0])}
	case unix.SYS_PSELECT6, sysSelect:
		nfds, readfds := int(min(args[0], 1024)), args[1]
		if readfds == 0 || nfds <= 0 {
			return Blocked{Call: CallOther}
		}
		timeout := timeoutAt(pid, args[4], nr == unix.SYS_PSELECT6)
		if nfds == 1 { // only fd 0 can be in the set: no need to read it
			return multiplex([]int{0}, timeout)
		}
		set, ok := readMem(pid, readfds, (nfds+7)/8)
		if !ok {
			return Blocked{Call: CallUnknown}
		}
		var fds []int
		for fd := 0; fd < nfds; fd++ {
			if set[fd/8]&(1<<(fd%8)) != 0 {
				fds = append(fds, fd)
			}
		}
		return multiplex(fds, timeout)
	case unix.SYS_PPOLL, sysPoll:
		n := int(min(args[1], 256))
		if n == 0 {
			return Blocked{Call: CallOther}
		}
		raw, ok := readMem(pid, args[0], n*8)
		if !ok {
			return Blocked{Call: CallUnknown}
		}
		var fds []int
		for i := 0; i < n; i++ {
			fd := int32(binary.NativeEndian.Uint32(raw[i*8:]))
			ev := binary.NativeEndian.Uint16(raw[i*8+4:])
			if fd >= 0 && ev&(unix.POLLIN|unix.POLLPRI) != 0 {
				fds = append(fds, int(fd))
			}
		}
		if nr == unix.SYS_PPOLL {
			return multiplex(fds, timeoutAt(pid, args[2], true))
		}
		return multiplex(fds, msTimeout(args[2]))
	case unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2, sysEpollWait:
		fds, ok := epollSet(pid, int(args[0]))
		if !ok {
			return Blocked{Call: CallUnknown}
		}
		if nr == unix.SYS_EPOLL_PWAIT2 {
			return multiplex(fds, timeoutAt(pid, args[3], true))
		}
		return multiplex(fds, msTimeout(args[3]))
	}
	return Blocked{Call: CallOther}
}

// msTimeout is the timeout of poll and epoll_wait: an int of milliseconds, negative for
// none.
func msTimeout(arg uint64) time.Duration {
	ms := int32(arg)
	if ms < 0 {
		return NoTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// maxTimeoutSec bounds the seconds of a timeout read from memory, so that the Duration
// does not overflow; longer ones are this long.
const maxTimeoutSec = 1 << 32

// timeoutAt reads the timeout a waiting syscall points to: a struct timespec (ppoll,
// pselect6, epoll_pwait2) or a struct timeval (select), in process pid's memory. A null
// pointer is no timeout; an unreadable one counts as 0.
func timeoutAt(pid int, addr uint64, timespec bool) time.Duration {
	if addr == 0 {
		return NoTimeout
	}
	raw, ok := readMem(pid, addr, 16)
	if !ok {
		return 0
	}
	sec := int64(binary.NativeEndian.Uint64(raw))
	frac := int64(binary.NativeEndian.Uint64(raw[8:]))
	if !timespec {
		frac *= 1000 // microseconds
	}
	if sec < 0 || sec > maxTimeoutSec {
		return time.Duration(min(max(sec, 0), maxTimeoutSec)) * time.Second
	}
	return time.Duration(sec)*time.Second + time.Duration(frac)
}

// readMem reads n bytes of process pid's memory at addr (/proc/PID/mem).
func readMem(pid int, addr uint64, n int) ([]byte, bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	buf := make([]byte, n)
	m, err := unix.Pread(fd, buf, int64(addr))
	return buf, err == nil && m == n
}

// epollSet lists the fds an epoll instance watches for input (/proc/PID/fdinfo/EPFD).
func epollSet(pid, epfd int) ([]int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		return nil, false
	}
	return parseEpollSet(b), true
}

// parseEpollSet parses the "tfd:" lines of an epoll instance's fdinfo.
func parseEpollSet(b []byte) []int {
	var fds []int
	for line := range bytes.Lines(b) {
		// "tfd:        0 events:       19 data: …"
		rest, ok := bytes.CutPrefix(line, []byte("tfd:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) < 3 || string(f[1]) != "events:" {
			continue
		}
		fd, err1 := strconv.Atoi(string(f[0]))
		ev, err2 := strconv.ParseUint(string(f[2]), 16, 32)
		if err1 == nil && err2 == nil && ev&(unix.EPOLLIN|unix.EPOLLPRI) != 0 {
			fds = append(fds, fd)
		}
	}
	return fds
}

// threadRuntime reads /proc/PID/task/TID/schedstat (its first field is the time on CPU).
func (r *Reader) threadRuntime(pid, tid int) (uint64, bool) {
	b, ok := r.read("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/schedstat")
	if !ok {
		return 0, false
	}
	var f [1][]byte
	if fields(b, f[:]) == 0 {
		return 0, false
	}
	return decimal(f[0])
}

// fdOf stats /proc/PID/fd/FD (following the link to the open file).
func fdOf(pid, fd int) FD {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), &st); err != nil {
		if err == unix.EACCES || err == unix.EPERM {
			return FD{Kind: FDUnknown}
		}
		return FD{Kind: FDOther}
	}
	return fdFromStat(&st)
}

func fdFromStat(st *unix.Stat_t) FD {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		switch st.Rdev {
		case devTTY:
			return FD{Kind: FDDevTTY, Rdev: st.Rdev}
		case devPtmx:
			return FD{Kind: FDPtmx, Rdev: st.Rdev}
		}
		return FD{Kind: FDCharDev, Rdev: st.Rdev}
	case unix.S_IFSOCK:
		return FD{Kind: FDSocket}
	case unix.S_IFIFO:
		return FD{Kind: FDPipe, Dev: st.Dev, Ino: st.Ino}
	}
	return FD{Kind: FDOther}
}

// fdsOf lists /proc/PID/fd and stats each entry; entries that vanish are skipped.
func fdsOf(pid int) ([]FD, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	fds := make([]FD, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if unix.Stat(dir+n, &st) != nil {
			continue
		}
		fds = append(fds, fdFromStat(&st))
	}
	return fds, true
}

// ptyPeer reads the master's "tty-index:" in /proc/PID/fdinfo/FD and stats /dev/pts/N.
func ptyPeer(pid, fd int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("tty-index:")); ok {
			if n, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil {
				var pts unix.Stat_t
				if unix.Stat("/dev/pts/"+strconv.Itoa(n), &pts) == nil {
					return pts.Rdev, true
				}
			}
		}
	}
	return 0, false
}

// dupFD copies the fd through pidfd_open and pidfd_getfd. Between Keep and Release the
// pidfd is kept for the next copy from the same pid, as long as its process lives: once
// it is gone (reaped), pidfd_getfd fails with ESRCH and the pid is opened afresh, so a
// new process with the same pid is never read through the old one's pidfd, nor the
// old one's through the new.
func (r *Reader) dupFD(pid, fd int) (int, error) {
	if r.pidfdPid == pid {
		dup, err := unix.PidfdGetfd(r.pidfd, fd, 0)
		if err != unix.ESRCH {
			return dup, err
		}
		unix.Close(r.pidfd)
		r.pidfdPid = 0
	}
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, err
	}
	dup, err := unix.PidfdGetfd(pfd, fd, 0)
	if r.keeping && err != unix.ESRCH {
		if r.pidfdPid != 0 {
			unix.Close(r.pidfd)
		}
		r.pidfd, r.pidfdPid = pfd, pid
	} else {
		unix.Close(pfd)
	}
	return dup, err
}

// fields fills f with the first len(f) fields of b (at most 8) separated by ASCII white
// space, as slices of b, and returns how many it found: fieldSpans, sliced.
func fields(b []byte, f [][]byte) int {
	var sp [8][2]int
	n := fieldSpans(b, sp[:min(len(f), len(sp))])
	for i := range n {
		f[i] = b[sp[i][0]:sp[i][1]]
	}
	return n
}
