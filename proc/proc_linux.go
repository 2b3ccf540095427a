package proc

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reader reads /proc into one scratch buffer, for walks that read many small files (the
// waiting-for-input detector). Not safe for concurrent use; the zero value is ready.
type Reader struct {
	buf []byte
	// kept holds, between Keep and Release, the descriptors of the files read, by path;
	// children those of the children files read, each with its liveness check
	// (keptChildren). Together they hold at most maxKept descriptors.
	kept     map[string]int
	children map[string]keptChildren
	keeping  bool
	// pidfd is, between Keep and Release, the pidfd of process pidfdPid that the last
	// DupFD opened (pidfdPid 0: none).
	pidfd, pidfdPid int
}

// maxKept bounds the descriptors of files a Reader keeps open between Keep and Release;
// with the pidfd that makes KeptMax. They hold every file the detector reads of a
// single-threaded program (its stat, which gives its thread's state too, its thread's
// syscall and schedstat, and its children with their liveness check: five); of a
// program with many threads the first ones are kept and the rest opened at each read.
const maxKept = KeptMax - 1

// keptChildren is a children file (/proc/PID/task/TID/children) kept open, with a
// descriptor of the same thread's stat file opened just before it. A kept children file
// cannot say by itself that its thread is gone: the kernel reads it as empty then, as for
// a thread without children, where the other files fail with ESRCH. After an empty read,
// the stat file read through live tells them apart: still readable, the thread it was
// opened for is alive, so the children file (opened after it, while it was alive) is
// that thread's, and the pid names it still; unreadable, both are dropped and opened
// afresh. A read that is not empty needs no check: only a live thread has children.
type keptChildren struct{ fd, live int }

// nkept counts the descriptors in r.kept and r.children.
func (r *Reader) nkept() int { return len(r.kept) + 2*len(r.children) }

// Keep makes the Reader keep each file it reads open, until Release, and read it again
// through the same descriptor: a look repeated many times (the detector's tries while a
// program is about to block, and the next call's looks at the same program) then costs
// one pread(2) a file instead of open, pread and close. A kept descriptor stays bound to
// the process it was opened for: once that process is gone a read through it fails, and
// the file is opened afresh (a new process with the same pid is read as before). At most
// maxKept files are kept, and the pidfd DupFD last opened (it is bound to its process the
// same way): KeptMax descriptors in all.
func (r *Reader) Keep() { r.keeping = true }

// Release closes the descriptors kept since Keep and stops keeping them. The map goes
// too: a Reader is kept per session, and an idle one holds nothing.
func (r *Reader) Release() {
	for _, fd := range r.kept {
		unix.Close(fd)
	}
	for _, k := range r.children {
		unix.Close(k.fd)
		unix.Close(k.live)
	}
	if r.pidfdPid != 0 {
		unix.Close(r.pidfd)
		r.pidfdPid = 0
	}
	r.kept, r.children = nil, nil
	r.keeping = false
}

// read reads a small /proc file (up to 4 KiB) into the scratch buffer. The buffer starts
// at 512 bytes, which holds the stat, syscall and schedstat files, and grows to 4 KiB
// only for a file that fills it: a Reader kept per session costs little while idle.
func (r *Reader) read(path string) ([]byte, bool) {
	if r.buf == nil {
		r.buf = make([]byte, 512)
	}
	if fd, ok := r.kept[path]; ok {
		if b, ok := r.pread(fd); ok {
			return b, true
		}
		unix.Close(fd) // its process is gone (or the pid names another one now)
		delete(r.kept, path)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	b, ok := r.pread(fd)
	if ok && r.keeping && r.nkept() < maxKept {
		if r.kept == nil {
			r.kept = map[string]int{}
		}
		r.kept[path] = fd
	} else {
		unix.Close(fd)
	}
	return b, ok
}

// readChildren reads the children file of the thread whose /proc directory is dir
// (/proc/PID/task/TID/), as read does, but keeps it with its liveness check
// (keptChildren). ok is false when the thread has no children or is gone.
func (r *Reader) readChildren(dir string) ([]byte, bool) {
	if r.buf == nil {
		r.buf = make([]byte, 512)
	}
	path := dir + "children"
	if k, ok := r.children[path]; ok {
		if b, ok := r.pread(k.fd); ok {
			return b, true
		}
		if _, alive := r.pread(k.live); alive {
			return nil, false // no children
		}
		unix.Close(k.fd) // its thread is gone (or the pid names another one now)
		unix.Close(k.live)
		delete(r.children, path)
	}
	if !r.keeping || r.nkept()+2 > maxKept {
		return r.read(path)
	}
	live, err := unix.Open(dir+"stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(live)
		return nil, false
	}
	b, ok := r.pread(fd)
	if !ok {
		if _, alive := r.pread(live); !alive {
			unix.Close(fd)
			unix.Close(live)
			return nil, false
		}
	}
	if r.children == nil {
		r.children = map[string]keptChildren{}
	}
	r.children[path] = keptChildren{fd, live}
	return b, ok
}

// pread reads the file open as fd from its start into the scratch buffer.
func (r *Reader) pread(fd int) ([]byte, bool) {
	n, err := unix.Pread(fd, r.buf, 0)
	if err == nil && n == len(r.buf) && len(r.buf) < 4096 {
		r.buf = make([]byte, 4096)
		n, err = unix.Pread(fd, r.buf, 0)
	}
	if err != nil || n <= 0 {
		return nil, false
	}
	return r.buf[:n], true
}

// readFile reads a whole /proc file with plain system calls: open, reads, close.
// os.ReadFile costs five more per file here (the runtime tries to register the
// descriptor with its poller, which refuses a /proc file, then sets it back to blocking,
// and stats it for its size, which /proc does not know), and the exit path and the
// reaper's sweeps read a few of these per session. The error of a failed open is the
// Errno, so errors.Is(err, fs.ErrNotExist) holds for a missing file.
func readFile(path string) ([]byte, error) { return readFileInto(path, make([]byte, 0, 512)) }

// readFileInto is readFile into buf's spare capacity (grown when the file is larger): a
// caller that passes an array on its stack reads a small file without allocating.
func readFileInto(path string, buf []byte) ([]byte, error) { return readInto(path, buf, false) }

// readLineInto is readFileInto for a file of one line that the kernel makes whole at
// the first read (/proc/PID/stat): a read that returns less than it asked for, ending
// with the line's newline, is the whole file, so the read(2) that would only have
// found its end is not made (three system calls, not four).
func readLineInto(path string, buf []byte) ([]byte, error) { return readInto(path, buf, true) }

func readInto(path string, buf []byte, line bool) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		short := len(b)+n < cap(b)
		b = b[:len(b)+n]
		if line && short && b[len(b)-1] == '\n' {
			return b, nil
		}
	}
}

// Stat reads /proc/PID/stat.
func (r *Reader) Stat(pid int) (Info, bool) {
	b, ok := r.read("/proc/" + strconv.Itoa(pid) + "/stat")
	if !ok {
		return Info{}, false
	}
	return parseStat(pid, b)
}

// parseStat parses "pid (comm) state ppid pgrp session tty_nr …"; comm may hold spaces
// and parentheses, so the fields start after the last ')'. It allocates nothing (the
// waiting-for-input probe parses one per process of a session on each check).
func parseStat(pid int, b []byte) (Info, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Info{}, false
	}
	b = b[i+2:]
	var sp [20][2]int
	if fieldSpans(b, sp[:]) < len(sp) {
		return Info{}, false
	}
	var f [20][]byte // slices of b, made here: fieldSpans keeps b on its caller's stack
	for k, s := range sp {
		f[k] = b[s[0]:s[1]]
	}
	num := func(k int) uint64 {
		v, _ := decimal(f[k])
		return v
	}
	inum := func(k int) int {
		v, ok := decimal(f[k])
		if !ok && len(f[k]) > 1 && f[k][0] == '-' {
			v, _ = decimal(f[k][1:])
			return -int(v)
		}
		return int(v)
	}
	in := Info{PID: pid, State: f[0][0], PPID: inum(1), Pgid: inum(2), Sid: inum(3),
		Threads: inum(17), Start: num(19), CPU: num(11) + num(12)}
	if tty := num(4); tty != 0 {
		// tty_nr packs the device number as the kernel's old encoding.
		major := uint32(tty>>8) & 0xfff
		minor := uint32(tty&0xff) | uint32(tty>>12)&0xfff00
		in.TTY = unix.Mkdev(major, minor)
	}
	return in, true
}

// fieldSpans fills sp with the bounds of the first len(sp) fields of b separated by
// ASCII white space (as bytes.Fields splits /proc's files) and returns how many it
// found. It stores no pointer, so a b on the caller's stack stays there.
func fieldSpans(b []byte, sp [][2]int) int {
	n := 0
	for i := 0; i < len(b) && n < len(sp); {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		start := i
		for i < len(b) && !isSpace(b[i]) {
			i++
		}
		if i > start {
			sp[n] = [2]int{start, i}
			n++
		}
	}
	return n
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// decimal parses b as an unsigned decimal number (false: empty, another byte, or too
// large for 64 bits).
func decimal(b []byte) (uint64, bool) {
	return parseUint(b, 10)
}

// parseUint parses b as an unsigned number in base 10 or 16 (without a prefix), as
// strconv.ParseUint does, without converting it to a string first.
func parseUint(b []byte, base uint64) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if v > (^uint64(0)-d)/base {
			return 0, false
		}
		v = v*base + d
	}
	return v, true
}

// ThreadState returns the state letter of thread tid of process pid. The leader's (tid
// pid) is read from /proc/PID/stat, whose state is the leader thread's own (the other
// fields sum the threads): one file, and one kept descriptor, with Stat.
func (r *Reader) ThreadState(pid, tid int) (byte, bool) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	if tid != pid {
		path = "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/stat"
	}
	b, ok := r.read(path)
	if !ok {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	return b[i+2], true
}

// Tasks lists the thread ids of pid (just pid when threads is 1).
func (r *Reader) Tasks(pid, threads int) []int {
	if threads == 1 {
		return []int{pid}
	}
	d, err := os.Open("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if t, err := strconv.Atoi(n); err == nil {
			tids = append(tids, t)
		}
	}
	return tids
}

// AppendChildren appends the children of every thread of pid (threads as in Info).
func (r *Reader) AppendChildren(out []int, pid, threads int) []int {
	for _, tid := range r.Tasks(pid, threads) {
		b, ok := r.readChildren("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/")
		if !ok {
			continue
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func stat(pid int) (Info, error) {
	var buf [512]byte
	b, err := readLineInto("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if err != nil {
		return Info{}, ErrGone
	}
	in, ok := parseStat(pid, b)
	if !ok {
		return Info{}, ErrGone
	}
	return in, nil
}

func list() []Info {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]Info, 0, len(names))
	var r Reader
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if in, ok := r.Stat(pid); ok {
			out = append(out, in)
		}
	}
	return out
}

func children(pid int) []int {
	var t Tree
	return t.Children(pid)
}

// fastChildren reads /proc/PID/task/*/children. ok is false when the kernel has no
// children files (CONFIG_PROC_CHILDREN off); a vanished pid has none.
func fastChildren(pid int) (kids []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, true // gone
	}
	for _, task := range tasks {
		b, err := readFile(dir + task.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				if _, serr := os.Stat(dir + task.Name()); serr == nil {
					return nil, false // the thread exists but the file does not
				}
			}
			continue
		}
		kids = appendPids(kids, b)
	}
	return kids, true
}

// threadChildren reads /proc/PID/task/TID/children: the children thread tid of pid
// started (false: the file cannot be read).
func threadChildren(pid, tid int) ([]int, bool) {
	var buf [512]byte
	b, err := readFileInto("/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid)+"/children", buf[:])
	if err != nil {
		return nil, false
	}
	return appendPids(nil, b), true
}

// appendPids appends the pids of a children file (numbers separated by spaces) to kids.
func appendPids(kids []int, b []byte) []int {
	for i := 0; i < len(b); {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		start := i
		for i < len(b) && !isSpace(b[i]) {
			i++
		}
		if n, ok := decimal(b[start:i]); ok && n <= math.MaxInt32 {
			kids = append(kids, int(n))
		}
	}
	return kids
}

func canReadExitStatus(pid int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// environ reads /proc/PID/environ. An empty or failed read is final (read true, no
// block) for a process that will never show this process an environment — another
// user's (EACCES), or a kernel thread — or whose environment is really empty (`env -i`:
// the kernel has set up its image, env_end in its stat is not 0), and not (read false)
// otherwise: a process between fork and exec, or inside an exec (its new image's env_end
// is still 0), shows none for a moment. A process whose environment is really empty is
// thus read once, not again and again by callers waiting for it to show one (a sweep's
// every scan would wait for it).
func environ(pid int) ([]byte, bool) {
	path := "/proc/" + strconv.Itoa(pid) + "/environ"
	b, err := readFile(path)
	if err != nil && (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)) {
		return nil, true
	}
	if err != nil || len(b) == 0 {
		kthread, envSet := imageState(pid)
		if kthread {
			return nil, true // a kernel thread's read fails (ESRCH: it has no memory)
		}
		if err != nil || !envSet {
			return nil, false
		}
		// The image is set up now (it may have been only now): what it shows is final.
		if b, err = readFile(path); err != nil {
			return nil, false
		}
		return b, true
	}
	return b, true
}

// pfKthread is the kernel's PF_KTHREAD flag, in the flags field of /proc/PID/stat.
const pfKthread = 0x00200000

// imageState reads pid's stat: whether it is a kernel thread, and whether the kernel has
// set up its environment (env_end, field 51, is not 0: an exec sets it once the new
// image's stack holds the environment; it reads 0 during an exec, and to a process not
// allowed to read pid's environment). Both false when it cannot tell.
func imageState(pid int) (kthread, envSet bool) {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false, false
	}
	return statImageState(b)
}

// statImageState is imageState of the stat file's content b.
func statImageState(b []byte) (kthread, envSet bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false, false
	}
	b = b[i+2:] // field 3 on
	var sp [49][2]int
	n := fieldSpans(b, sp[:])
	if n < 7 {
		return false, false
	}
	flags, ok := decimal(b[sp[6][0]:sp[6][1]])
	if ok && flags&pfKthread != 0 {
		return true, false
	}
	if n < len(sp) {
		return false, false // a kernel without the field (before 3.5)
	}
	envEnd, ok := decimal(b[sp[48][0]:sp[48][1]])
	return false, ok && envEnd != 0
}

func commandLine(pid int) string {
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		b, _ = readFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return strings.TrimSpace(string(b))
	}
	return strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ")
}

func threadStates(pid int) ([]byte, bool) {
	var r Reader
	in, ok := r.Stat(pid)
	if !ok {
		return nil, false
	}
	var out []byte
	for _, tid := range r.Tasks(pid, in.Threads) {
		if s, ok := r.ThreadState(pid, tid); ok {
			out = append(out, s)
		}
	}
	return out, true
}

func exitStatus(pid int) (syscall.WaitStatus, bool) {
	var buf [512]byte
	b, err := readLineInto("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	// Field 3 (state) is the first after the name; exit_code is field 52.
	b = b[i+2:]
	var sp [50][2]int
	if fieldSpans(b, sp[:]) < len(sp) || b[sp[0][0]] != 'Z' {
		return 0, false
	}
	code, ok := decimal(b[sp[49][0]:sp[49][1]])
	if !ok || code > math.MaxInt32 {
		return 0, false
	}
	return syscall.WaitStatus(code), true
}
