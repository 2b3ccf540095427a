package proc

import (
	"bytes"
	"syscall"

	"golang.org/x/sys/unix"
)

// darwin: sysctl kern.proc.pid / kern.proc.all for the table, getsid(2) for the session
// (kinfo_proc holds only a kernel pointer to it), kern.procargs2 for the command line and
// environment. kinfo_proc carries no CPU time and no thread count there: Info.CPU and
// Info.Threads stay 0.

func fromKinfo(k *unix.KinfoProc) Info {
	in := Info{
		PID:   int(k.Proc.P_pid),
		PPID:  int(k.Eproc.Ppid),
		Pgid:  int(k.Eproc.Pgid),
		State: bsdState(k.Proc.P_stat),
		Start: uint64(k.Proc.P_starttime.Sec)*1e6 + uint64(k.Proc.P_starttime.Usec),
	}
	if k.Eproc.Tdev != -1 {
		in.TTY = uint64(uint32(k.Eproc.Tdev))
	}
	if sid, err := unix.Getsid(in.PID); err == nil {
		in.Sid = sid
	}
	return in
}

func stat(pid int) (Info, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || k == nil || int(k.Proc.P_pid) != pid {
		return Info{}, ErrGone
	}
	return fromKinfo(k), nil
}

func list() []Info {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	out := make([]Info, 0, len(ks))
	for i := range ks {
		out = append(out, fromKinfo(&ks[i]))
	}
	return out
}

func procargs(pid int) (argv, env [][]byte, ok bool) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, nil, false
	}
	argv, env = splitArgs(b, true)
	return argv, env, true
}

func environ(pid int) ([]byte, bool) {
	_, env, ok := procargs(pid)
	b := bytes.Join(env, []byte{0})
	return b, ok && len(b) > 0 // none (yet): worth reading again, see LookupEnv
}

func commandLine(pid int) string {
	argv, _, ok := procargs(pid)
	if !ok {
		return ""
	}
	return joinArgs(argv)
}

func exitStatus(pid int) (syscall.WaitStatus, bool) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || k == nil || int(k.Proc.P_pid) != pid || k.Proc.P_stat != 5 {
		return 0, false
	}
	return syscall.WaitStatus(k.Proc.P_xstat), true
}
