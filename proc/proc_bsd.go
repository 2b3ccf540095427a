//go:build darwin || freebsd

package proc

// Reader is the walk helper of the Linux backend; here each call asks sysctl. BSD has no
// per-thread states through kern.proc: ThreadState answers with the process's state.
type Reader struct{}

// Keep does nothing here: sysctl keeps no file open.
func (r *Reader) Keep() {}

// Release does nothing here (see Keep).
func (r *Reader) Release() {}

// Stat reads one process.
func (r *Reader) Stat(pid int) (Info, bool) {
	in, err := stat(pid)
	return in, err == nil
}

// ThreadState returns the state of process pid (per-thread states are not available).
func (r *Reader) ThreadState(pid, tid int) (byte, bool) {
	in, err := stat(pid)
	return in.State, err == nil
}

// Tasks returns just pid: threads are not listed here.
func (r *Reader) Tasks(pid, threads int) []int { return []int{pid} }

// AppendChildren appends the children of pid (one scan of the process table).
func (r *Reader) AppendChildren(out []int, pid, threads int) []int {
	return append(out, children(pid)...)
}

func children(pid int) []int {
	var kids []int
	for _, p := range list() {
		if p.PPID == pid && p.PID != pid {
			kids = append(kids, p.PID)
		}
	}
	return kids
}

// fastChildren: no per-process children list here; Tree scans the table once.
func fastChildren(int) ([]int, bool) { return nil, false }

func threadStates(int) ([]byte, bool) { return nil, false }

// threadChildren: no per-thread children lists here.
func threadChildren(int, int) ([]int, bool) { return nil, false }

func canReadExitStatus(pid int) bool {
	_, err := stat(pid)
	return err == nil
}
