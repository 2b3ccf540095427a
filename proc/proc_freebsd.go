package proc

import (
	"encoding/binary"
	"syscall"

	"golang.org/x/sys/unix"
)

// FreeBSD: sysctl kern.proc.pid / kern.proc.proc return struct kinfo_proc, which
// golang.org/x/sys does not define; the fields are read at their offsets in the amd64 and
// arm64 layout (ki_structsize 0x440, checked). kern.proc.env and kern.proc.args give
// another process's environment and arguments.

const kinfoSize = 0x440

// Offsets in struct kinfo_proc (sys/user.h, 64-bit).
const (
	offStructsize = 0
	offPid        = 72
	offPpid       = 76
	offPgid       = 80
	offSid        = 88
	offTdev11     = 100 // ki_tdev_freebsd11, uint32
	offRuntime    = 328 // ki_runtime, microseconds
	offStart      = 336 // ki_start, struct timeval
	offStat       = 388 // ki_stat
)

func fromKinfo(b []byte) (Info, bool) {
	if len(b) < kinfoSize || int(binary.NativeEndian.Uint32(b[offStructsize:])) != kinfoSize {
		return Info{}, false
	}
	i32 := func(off int) int { return int(int32(binary.NativeEndian.Uint32(b[off:]))) }
	u64 := func(off int) uint64 { return binary.NativeEndian.Uint64(b[off:]) }
	in := Info{
		PID:   i32(offPid),
		PPID:  i32(offPpid),
		Pgid:  i32(offPgid),
		Sid:   i32(offSid),
		State: bsdState(int8(b[offStat])),
		Start: u64(offStart)*1e6 + u64(offStart+8),
		CPU:   u64(offRuntime),
	}
	if t := binary.NativeEndian.Uint32(b[offTdev11:]); t != 0xffffffff {
		in.TTY = uint64(t)
	}
	return in, true
}

func stat(pid int) (Info, error) {
	b, err := unix.SysctlRaw("kern.proc.pid", pid)
	if err != nil {
		return Info{}, ErrGone
	}
	in, ok := fromKinfo(b)
	if !ok || in.PID != pid {
		return Info{}, ErrGone
	}
	return in, nil
}

func list() []Info {
	b, err := unix.SysctlRaw("kern.proc.proc")
	if err != nil {
		return nil
	}
	out := make([]Info, 0, len(b)/kinfoSize)
	for len(b) >= kinfoSize {
		if in, ok := fromKinfo(b[:kinfoSize]); ok {
			out = append(out, in)
		}
		b = b[kinfoSize:]
	}
	return out
}

func environ(pid int) ([]byte, bool) {
	b, err := unix.SysctlRaw("kern.proc.env", pid)
	return b, err == nil && len(b) > 0 // none (yet): worth reading again, see LookupEnv
}

func commandLine(pid int) string {
	b, err := unix.SysctlRaw("kern.proc.args", pid)
	if err != nil {
		return ""
	}
	argv, _ := splitArgs(b, false)
	return joinArgs(argv)
}

const offXstat = 304 // ki_xstat, u_short

func exitStatus(pid int) (syscall.WaitStatus, bool) {
	b, err := unix.SysctlRaw("kern.proc.pid", pid)
	if err != nil {
		return 0, false
	}
	in, ok := fromKinfo(b)
	if !ok || in.PID != pid || in.State != 'Z' {
		return 0, false
	}
	return syscall.WaitStatus(binary.NativeEndian.Uint16(b[offXstat:])), true
}
