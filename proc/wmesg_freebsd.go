package proc

import "golang.org/x/sys/unix"

// offWmesg is ki_wmesg in struct kinfo_proc (char[WMESGLEN+1], WMESGLEN 8), after
// ki_tdname (char[TDNAMLEN+1] at 394, TDNAMLEN 16).
const offWmesg = 411

// ThreadWaits calls fn with the wait of every thread of process pid (sysctl
// kern.proc.pid_td: one kinfo_proc per thread). ok is false when the process cannot be
// read (gone) or this OS does not report waits. It reads the kernel's process table
// and changes nothing.
func ThreadWaits(pid int, fn func(WaitKind)) (ok bool) {
	b, err := unix.SysctlRaw("kern.proc.pid_td", pid)
	if err != nil || len(b) < kinfoSize {
		return false
	}
	for ; len(b) >= kinfoSize; b = b[kinfoSize:] {
		in, ok := fromKinfo(b[:kinfoSize])
		if !ok || in.PID != pid {
			return false
		}
		msg := b[offWmesg : offWmesg+9]
		n := 0
		for n < len(msg) && msg[n] != 0 {
			n++
		}
		fn(waitKindOf(string(msg[:n])))
	}
	return true
}
