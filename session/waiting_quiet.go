package session

import (
	"bytes"
	"time"

	"github.com/ptyhub/ptyhub/proc"
)

// The waiting-for-input detector without the kernel's view of blocked threads (macOS,
// FreeBSD, and Linux built with the ptyhub_portable tag: proc.SyscallView is false). On
// FreeBSD each thread's wait message (ki_wmesg) decides first when every thread of the
// foreground group sleeps on something it names: "ttyin" is a terminal read (reported as
// "tty_read"), a timer, a child or a pipe is not a prompt. Otherwise (macOS, the portable Linux build, a FreeBSD thread in select/poll)
// the verdict is a heuristic, reported as "quiet". It says "maybe waiting" (the caller
// then also requires waitQuiet of quiet output) only when all of these hold:
//   - output has settled: nothing unread at the master, nothing held by the reader
//     goroutine, nothing unread in the hub;
//   - every process of the terminal's foreground group (and every thread, where the OS
//     lists thread states) sleeps: none runs, waits on disk or is stopped;
//   - the group's CPU time has not moved for cpuWindow (where the OS reports it; macOS's
//     kern.proc does not, so there the states alone count);
//   - the terminal holds no input a read would take now (poll on the slave);
//   - the terminal has the shape of a prompt (promptShaped): out of canonical mode or echo
//     off, or the output's last line unterminated.
//
// It never fires while a foreground process runs, nor for a program that sleeps silently
// or after a complete line (`sleep 1; echo X`); it cannot tell a prompt-shaped pause
// ("Working: " then silence) from a prompt: such a call returns after waitQuiet with
// waiting_for_input set and wait_detection "quiet". A program that reads the terminal
// without a prompt (a bare `cat`) is not reported as waiting.

// cpuWindow is how long the foreground group's CPU time must stay still.
const cpuWindow = 100 * time.Millisecond

// probeQuiet looks once at the foreground process group of s's terminal (collectMu
// held). It reads the process table for the session's tree and polls the terminal; it
// changes nothing but its own cache.
func (s *Session) probeQuiet() (waitVerdict, string) {
	if !s.tty || s.isExited() || !s.outputSettled() {
		return waitNo, ""
	}
	w := &s.wait
	pgrp, err := s.master.ForegroundPgrp()
	if err != nil || pgrp <= 0 {
		return waitUnsure, ""
	}
	cpu, asleep, found := s.foregroundAsleep(w, pgrp)
	if !found || !asleep {
		w.cpuSet = false
		return waitNo, ""
	}
	// Where the OS names each thread's wait (FreeBSD), a group whose threads all sleep
	// on known things is decided exactly: reading the terminal is a prompt, a timer or a
	// child is not. A thread in select/poll/kevent leaves it to the heuristic.
	switch foregroundWaits(w.fg) {
	case proc.WaitTTYRead:
		if pending, ok := slaveInputPending(s.master); !ok || pending || !s.outputSettled() {
			return waitNo, ""
		}
		return waitYes, methodRead
	case proc.WaitOther:
		return waitNo, ""
	}
	now := time.Now()
	if !w.cpuSet || w.pgrp != pgrp || w.cpu != cpu {
		ran := w.cpuSet && w.pgrp == pgrp
		w.pgrp, w.cpu, w.cpuSet, w.since = pgrp, cpu, true, now
		if ran {
			return waitNo, "" // it used the processor since the last look
		}
		return waitUnsure, "" // a first look: the CPU time needs a second one
	}
	if now.Sub(w.since) < cpuWindow {
		return waitUnsure, ""
	}
	if pending, ok := slaveInputPending(s.master); !ok || pending {
		return waitNo, ""
	}
	if !s.outputSettled() {
		return waitNo, ""
	}
	if !s.promptShaped() {
		return waitNo, ""
	}
	return waitMaybe, methodQuiet
}

// promptShaped reports whether the terminal looks like a prompt: the program took it out
// of canonical mode or turned echo off (a line editor, a full-screen program, a password
// prompt), or the output's last line is unterminated ("Name: "). A program that sleeps
// silently, or after a complete line, is not at a prompt. Trailing escape sequences
// (colour resets, mode changes) do not count as text.
func (s *Session) promptShaped() bool {
	if a, err := s.master.Attrs(); err == nil && (!a.Canonical || !a.Echo) {
		return true
	}
	end := s.hub.End()
	var buf [256]byte
	from := max(end-int64(len(buf)), 0)
	n, _, _ := s.hub.ReadAt(buf[:end-from], from)
	return unterminated(buf[:n])
}

// unterminated reports whether tail, the end of the output, ends inside a line that has
// text, once trailing CSI sequences are stripped.
func unterminated(tail []byte) bool {
	for {
		i := bytes.LastIndexByte(tail, 0x1b)
		if i < 0 || i+2 > len(tail) || tail[i+1] != '[' {
			break
		}
		seq := tail[i+2:]
		if len(seq) == 0 || seq[len(seq)-1] < 0x40 || seq[len(seq)-1] > 0x7e {
			break
		}
		if bytes.ContainsFunc(seq[:len(seq)-1], func(r rune) bool { return r < 0x20 || r > 0x3f }) {
			break
		}
		tail = tail[:i]
	}
	tail = bytes.TrimRight(tail, " \t")
	return len(tail) > 0 && tail[len(tail)-1] != '\n' && tail[len(tail)-1] != '\r'
}

// foregroundWaits sums up the waits of the threads of processes pids: WaitTTYRead when
// every thread sleeps on something known and one of them reads the terminal, WaitOther
// when none does, WaitNone when some wait is not known (no wait messages on this OS, a
// thread in select/poll, or one that could not be read).
func foregroundWaits(pids []int) proc.WaitKind {
	tty, unknown := false, false
	for _, pid := range pids {
		ok := proc.ThreadWaits(pid, func(k proc.WaitKind) {
			switch k {
			case proc.WaitTTYRead:
				tty = true
			case proc.WaitMultiplex, proc.WaitNone:
				unknown = true
			}
		})
		if !ok || unknown {
			return proc.WaitNone
		}
	}
	switch {
	case len(pids) == 0:
		return proc.WaitNone
	case tty:
		return proc.WaitTTYRead
	}
	return proc.WaitOther
}

// foregroundAsleep walks the session's tree from its leader (and the group's leader, in
// case it escaped the tree) and reports whether every live process of group pgrp sleeps,
// with their summed CPU time. found is false when the group has no live process.
func (s *Session) foregroundAsleep(w *waitState, pgrp int) (cpu uint64, asleep, found bool) {
	w.fg = w.fg[:0]
	check := func(in proc.Info) bool {
		found = true
		w.fg = append(w.fg, in.PID)
		cpu += in.CPU
		if !in.Asleep() {
			return false
		}
		if in.Threads > 1 {
			for _, tid := range w.pr.Tasks(in.PID, in.Threads) {
				if st, ok := w.pr.ThreadState(in.PID, tid); ok && st != 'S' && st != 'I' && st != 'Z' && st != 'X' {
					return false
				}
			}
		}
		return true
	}
	sawLeader := false
	w.visited = append(w.visited[:0], s.pid)
	for i := 0; i < len(w.visited) && i < maxWaitProcs; i++ {
		pid := w.visited[i]
		in, ok := w.pr.Stat(pid)
		if !ok {
			continue
		}
		if in.Pgid == pgrp && !in.Dead() {
			sawLeader = sawLeader || pid == pgrp
			if !check(in) {
				return 0, false, true
			}
		}
		w.visited = w.pr.AppendChildren(w.visited, pid, in.Threads)
	}
	if !sawLeader {
		if in, ok := w.pr.Stat(pgrp); ok && in.Pgid == pgrp && !in.Dead() && !check(in) {
			return 0, false, true
		}
	}
	return cpu, true, found
}
