package session

import "github.com/ptyhub/ptyhub/proc"

// stoppedForeground returns a stopped process (state T) of the terminal's foreground
// process group, or 0. A program stopped by SIGSTOP, or by SIGTSTP outside a job-control
// shell, stays stopped: nothing in the session will continue it (the reaper continues
// only a stopped leader). It walks the session's tree from the leader (bounded), a few
// /proc reads per process.
func (s *Session) stoppedForeground() int {
	if !s.tty || s.isExited() {
		return 0
	}
	pgrp, err := s.master.ForegroundPgrp()
	if err != nil || pgrp <= 0 {
		return 0
	}
	todo := []int{s.pid}
	for i := 0; i < len(todo) && i < 256; i++ {
		info, err := proc.Stat(todo[i])
		if err != nil {
			continue
		}
		if info.Pgid == pgrp && info.State == 'T' {
			return todo[i]
		}
		todo = append(todo, proc.Children(todo[i])...)
	}
	return 0
}
