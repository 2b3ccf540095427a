package reaper

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// proc is one line of the process table, read from /proc/PID/stat.
type proc struct {
	pid, ppid, pgid, sid int
	state                byte
}

// scanProcs reads the process table. Processes that vanish while it reads are skipped.
func scanProcs() map[int]*proc {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	tab := make(map[int]*proc, len(names))
	buf := make([]byte, 512)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p := readStat(pid, buf); p != nil {
			tab[pid] = p
		}
	}
	return tab
}

func readStat(pid int, buf []byte) *proc {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	n, _ := f.Read(buf)
	f.Close()
	b := buf[:n]
	// "pid (comm) state ppid pgrp session ..."; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return nil
	}
	fields := strings.Fields(string(b[i+2:]))
	if len(fields) < 4 {
		return nil
	}
	p := &proc{pid: pid, state: fields[0][0]}
	p.ppid, _ = strconv.Atoi(fields[1])
	p.pgid, _ = strconv.Atoi(fields[2])
	p.sid, _ = strconv.Atoi(fields[3])
	return p
}

func (p *proc) dead() bool { return p.state == 'Z' || p.state == 'X' }

// environHas reports whether /proc/PID/environ holds the exact entry kv ("K=V").
func environHas(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// commandLine returns the process's command line, shortened, for reports.
func commandLine(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		b, _ = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return strings.TrimSpace(string(b))
	}
	s := strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// procTree answers "children of pid" from /proc/PID/task/*/children, or, on kernels
// without that file, from one scan of the whole process table.
type procTree struct {
	byParent map[int][]int // set once the fallback scan ran
}

func newProcTree() *procTree { return &procTree{} }

func (t *procTree) children(pid int) []int {
	if t.byParent == nil {
		if kids, ok := readChildren(pid); ok {
			return kids
		}
		t.byParent = map[int][]int{}
		for _, p := range scanProcs() {
			t.byParent[p.ppid] = append(t.byParent[p.ppid], p.pid)
		}
	}
	return t.byParent[pid]
}

// readChildren reads the children of every thread of pid. ok is false when the kernel
// has no children files (CONFIG_PROC_CHILDREN off); a vanished pid has none.
func readChildren(pid int) (kids []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, true // gone
	}
	for _, task := range tasks {
		b, err := os.ReadFile(dir + task.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				if _, serr := os.Stat(dir + task.Name()); serr == nil {
					return nil, false // the thread exists but the file does not
				}
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				kids = append(kids, n)
			}
		}
	}
	return kids, true
}

// sessionMembers returns the live processes of the session tagged tag, under the reaper
// self: the leader's subtree (while the leader is alive), and orphans re-parented to the
// reaper (with their subtrees) whose session id is the leader's or whose environment
// carries PTYHUB_SESSION=tag. With tag "", every descendant of the reaper. liveLeader
// says whether a pid is a leader not yet reaped (of any session), sidOf maps a leader pid
// (a session id) to its tag. It walks /proc/PID/task/*/children, so it costs
// O(session), not O(machine).
func sessionMembers(self int, tag string, leaderPid int, leaderAlive bool, liveLeader func(int) bool, sidOf func(int) (string, bool)) []*proc {
	tree := newProcTree()
	buf := make([]byte, 512)
	var roots []int
	if tag != "" && leaderAlive {
		roots = append(roots, leaderPid)
	}
	for _, c := range tree.children(self) {
		if tag == "" {
			roots = append(roots, c)
			continue
		}
		if liveLeader(c) {
			continue // a leader: its own session (ours is already a root)
		}
		p := readStat(c, buf)
		if p == nil || p.dead() {
			continue
		}
		owner, ok := sidOf(p.sid)
		if !ok && environHas(c, EnvSession+"="+tag) {
			owner, ok = tag, true
		}
		if ok && owner == tag {
			roots = append(roots, c)
		}
	}
	var out []*proc
	seen := map[int]bool{}
	for len(roots) > 0 {
		pid := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if p := readStat(pid, buf); p != nil && !p.dead() {
			out = append(out, p)
		}
		roots = append(roots, tree.children(pid)...)
	}
	return out
}
