//go:build linux || darwin || freebsd

package reaper

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/internal/schedslice"
	"github.com/ptyhub/ptyhub/proc"
)

// helperEnv marks the re-executed binary as a reaper; the socket to the manager is fd 3.
const helperEnv = "PTYHUB_REAPER"

// The hook that turns any binary importing this package into a reaper when the manager
// re-executes it. It never returns in that case.
func init() {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	if _, err := unix.Getsockname(3); err != nil {
		return // not started by a manager: carry on as a normal program
	}
	os.Exit(helperMain())
}

// leader is a session leader the reaper started.
type leader struct {
	tag    string
	start  uint64 // its start time (proc.Info.Start), read when first needed; 0: not yet
	exited bool   // held and exited: a zombie waiting for release
	// hold: do not reap it when it exits; the manager reads the exit status from the
	// zombie itself (no round trip through the reaper on the exit path) and then
	// releases it (opRelease).
	hold bool
}

// helper is the reaper process's state.
type helper struct {
	conn *net.UnixConn
	self int
	// spawner is the OS thread that forks every leader (the request loop, locked to it),
	// so the leaders are on its children list and orphans on the others'. Set before the
	// first request is read.
	spawner int
	wmu     sync.Mutex // serialises messages to the manager; guards wbuf
	wbuf    []byte     // the encoding of the message being sent (see send)

	// mu guards leaders and is held around fork and around reaping, so a leader's exit is
	// never reaped before its pid is recorded and its spawn reply is sent.
	mu      sync.Mutex
	leaders map[int]*leader // unreaped leader pid → its session
	tags    map[string]int  // tag → leader pid (kept after the leader exits, for sid attribution)
	sidTag  map[int]string  // the inverse of tags: a leader pid (a session id) → its tag
}

func helperMain() int {
	// The reaper's live heap is small (about 1 KiB a session) and it allocates little (a
	// message per spawn), so the collector's default headroom, at least 4 MB, was most of
	// its memory: with 1,000 idle sessions it grew ~5 KiB a session. A quarter of the
	// live heap as headroom costs a collection every few dozen spawns. A GOGC the user
	// set (passed on by the manager) wins.
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(25)
	}
	// One P: the reaper's work is a few short bursts per session (a fork, a reap, a
	// sweep's /proc reads), and with a second P every goroutine it readied (a reply, the
	// reap at SIGCHLD, a release's sweep) also woke an idle thread to spin for it, beside
	// the session's program on the same CPUs. Its system calls still hand the P on when
	// they block. The cost: one session's fork (the P stays with the forking thread until
	// the child has exec'd) holds up another session's reply for that long. A GOMAXPROCS
	// the user set (passed on by the manager) wins.
	if _, ok := os.LookupEnv("GOMAXPROCS"); !ok {
		runtime.GOMAXPROCS(1)
	}
	// Handled signals are reset to their defaults in children; without this a manager
	// started with & or nohup would pass ignored SIGINT/SIGHUP on to every session.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGPIPE,
		syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)

	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "ptyhub reaper: %v\n", err)
		return 1
	}
	// Children get fds 0-2 only: whatever the manager inherited without close-on-exec
	// (and passed on to us) must not leak into sessions.
	closeOnExecAll()
	fc, err := net.FileConn(os.NewFile(3, "reaper-socket"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "ptyhub reaper: %v\n", err)
		return 1
	}
	h := &helper{conn: fc.(*net.UnixConn), self: os.Getpid(),
		leaders: map[int]*leader{}, tags: map[string]int{}, sidTag: map[int]string{}}

	// The reaping goroutine: owns every wait. Stops when the process exits.
	go func() {
		for range chld {
			h.reap()
		}
	}()
	// The signal goroutine: TERM means shut down as if the manager went away.
	done := make(chan struct{})
	go func() {
		for s := range sigs {
			if s == syscall.SIGTERM {
				close(done)
				return
			}
		}
	}()
	// The request loop; it ends when the manager closes the socket or dies, or asks for
	// a shutdown (swept: it swept everything first, so the exit below need not again).
	reqDone := make(chan struct{})
	swept := false // written before reqDone is closed, read after
	go func() {
		defer close(reqDone)
		// Every fork happens on this thread (spawn runs in this loop). It is never the
		// main thread (init holds that one), to which the kernel re-parents orphans.
		runtime.LockOSThread()
		// Its children get the kernel's default time slice, whatever this process
		// inherited from its manager (a hosting process runs with a longer one).
		schedslice.Set(0, 0)
		h.mu.Lock()
		h.spawner = threadID()
		h.mu.Unlock()
		buf, oob := make([]byte, maxPacket), make([]byte, unix.CmsgSpace(4*8))
		for {
			m, fds, err := recv(h.conn, buf, oob)
			if err != nil {
				return
			}
			if m.Op == opShutdown {
				h.sweepAll()
				swept = true
				h.reply(m, &msg{})
				return
			}
			h.handle(m, fds)
		}
	}()
	select {
	case <-reqDone:
		if swept {
			return 0
		}
	case <-done:
	}
	h.sweepAll()
	return 0
}

func (h *helper) handle(m *msg, fds []int) {
	switch m.Op {
	case opSpawn:
		h.spawn(m, fds)
	case opRelease:
		closeAll(fds)
		go h.release(m)
	case opKill:
		closeAll(fds)
		// A sweep can take the grace period: run it aside so other requests go on.
		go func() {
			surv := h.sweep(m.Tag, time.Duration(m.GraceMs)*time.Millisecond, func(s []Survivor) {
				if !m.Wait {
					h.reply(m, &msg{Survivors: s})
				}
			}, false)
			if m.Wait {
				h.reply(m, &msg{Survivors: surv})
			}
		}()
	case opSignal:
		closeAll(fds)
		h.mu.Lock()
		pid, ok := h.tags[m.Tag]
		l, alive := h.leaders[pid]
		alive = alive && !h.hasExited(pid, l)
		var err error
		if ok && alive {
			// The leader is unreaped (held under h.mu, which every reap of it takes), so
			// its pid and the group id it made are its own: no new process can have them.
			err = proc.SignalGroup(pid, syscall.Signal(m.Sig))
			if errors.Is(err, proc.ErrGone) {
				err = proc.SignalChild(pid, syscall.Signal(m.Sig))
			}
		} else {
			err = errors.New("session has exited")
		}
		h.mu.Unlock()
		r := &msg{}
		if err != nil {
			r.Err = err.Error()
		}
		h.reply(m, r)
	default:
		closeAll(fds)
		h.reply(m, &msg{Err: "unknown op " + m.Op})
	}
}

func (h *helper) reply(req, r *msg) {
	r.ID, r.Op = req.ID, opReply
	h.wmu.Lock()
	send(h.conn, &h.wbuf, r, nil)
	h.wmu.Unlock()
}

func (h *helper) spawn(m *msg, fds []int) {
	defer closeAll(fds)
	if len(fds) != 3 {
		h.reply(m, &msg{Err: fmt.Sprintf("spawn needs 3 fds, got %d", len(fds))})
		return
	}
	attr := &syscall.ProcAttr{
		Dir:   m.Dir,
		Env:   m.Env,
		Files: []uintptr{uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2])},
		Sys:   &syscall.SysProcAttr{Setsid: true, Setctty: m.Ctty, Ctty: 0},
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	pid, err := syscall.ForkExec(m.Path, m.Argv, attr)
	if err != nil {
		r := &msg{Err: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			r.Errno = int(errno)
		}
		h.reply(m, r)
		return
	}
	h.leaders[pid] = &leader{tag: m.Tag, hold: m.Hold}
	h.tags[m.Tag] = pid
	h.sidTag[pid] = m.Tag
	// Sent under mu: the reply reaches the manager before the exit event can.
	h.reply(m, &msg{Pid: pid, Spawner: h.spawner})
	if !m.Hold {
		go h.watch(pid)
	}
}

// release reaps a held leader the manager saw exit, replies with its wait status, and
// sweeps what is left of its session aside.
func (h *helper) release(m *msg) {
	h.mu.Lock()
	l, ok := h.leaders[m.Pid]
	var ws unix.WaitStatus
	var err error
	if ok && l.tag == m.Tag {
		for {
			_, err = unix.Wait4(m.Pid, &ws, 0, nil)
			if err != unix.EINTR {
				break
			}
		}
		delete(h.leaders, m.Pid)
	} else {
		err = fmt.Errorf("pid %d is not a held leader of %s", m.Pid, m.Tag)
	}
	h.mu.Unlock()
	if err != nil {
		h.reply(m, &msg{Err: err.Error()})
		return
	}
	h.sweep(m.Tag, DefaultGrace, func(surv []Survivor) {
		h.reply(m, &msg{Status: int(ws), Survivors: surv})
	}, true)
}

// reap collects every child that changed state. A leader's exit goes to the manager
// with the processes that outlived it, which are then swept aside. Held leaders are left
// as zombies until the manager releases them (their exits are not looked for here:
// no call per leader alive); orphans that
// re-parented to the reaper are reaped as they exit.
func (h *helper) reap() {
	type ended struct {
		pid    int
		tag    string
		status unix.WaitStatus
	}
	var done []ended
	// Stops of leaders: a stopped leader is continued (see collectStops). Without h.mu:
	// its walk of every child must not hold up a spawn or a release.
	h.collectStops()
	h.mu.Lock()
	for pid, l := range h.leaders {
		if l.exited || l.hold {
			continue
		}
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG|leaderWaitFlags, nil)
		if wpid <= 0 || err != nil {
			continue
		}
		if ws.Stopped() { // only with leaderWaitFlags' WUNTRACED (portable paths)
			h.continueStopped(pid, ws.StopSignal())
			continue
		}
		delete(h.leaders, pid)
		done = append(done, ended{pid, l.tag, ws})
	}
	// Orphans: every child that is not a leader.
	kids, ok := orphanCandidates(h.self, h.spawner)
	if !ok {
		kids = orphans(h.self)
	}
	orphanReads.Lock()
	for _, c := range kids {
		if _, isLeader := h.leaders[c]; isLeader {
			continue
		}
		var ws unix.WaitStatus
		unix.Wait4(c, &ws, unix.WNOHANG, nil)
	}
	orphanReads.Unlock()
	h.mu.Unlock()
	for _, e := range done {
		// Whatever outlived the leader is named in the exit report and killed.
		h.sweep(e.tag, DefaultGrace, func(surv []Survivor) {
			h.wmu.Lock()
			send(h.conn, &h.wbuf, &msg{Op: opExit, Pid: e.pid, Tag: e.tag, Status: int(e.status), Survivors: surv}, nil)
			h.wmu.Unlock()
		}, true)
	}
}

// continueStopped does what tmux does: a stopped leader can never be resumed by anyone
// else, so continue it, unless it stopped to read or write the terminal.
func (h *helper) continueStopped(pid int, sig syscall.Signal) {
	if sig != syscall.SIGTTIN && sig != syscall.SIGTTOU {
		proc.SignalChild(pid, syscall.SIGCONT) // unreaped: called with h.mu held
	}
}

// members returns the live processes of the session tagged tag (see sessionMembers).
func (h *helper) members(tag string) []proc.Info {
	h.mu.Lock()
	leaderPid, known := h.tags[tag]
	spawner := h.spawner
	leaderAlive := false
	// The leader's pid, once reaped, can be another session's leader by now (pids wrap):
	// that one's tree is not ours.
	if l := h.leaders[leaderPid]; l != nil && l.tag == tag && !h.hasExited(leaderPid, l) {
		leaderAlive = true
	}
	h.mu.Unlock()
	if tag != "" && !known {
		return nil
	}
	// Lookups, not copies: one session's sweep costs O(that session). A leader that
	// exited and is not yet reaped is a zombie, skipped as well (without reading its
	// /proc entry: when many sessions end at once, most children are such zombies).
	liveLeader := func(pid int) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.leaders[pid] != nil
	}
	sidOf := func(sid int) (string, bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		t, ok := h.sidTag[sid]
		return t, ok
	}
	knownTag := func(t string) bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		_, ok := h.tags[t]
		return ok
	}
	// The earliest start of the other sessions' leaders still running (not exited):
	// an orphan nothing names is this session's only if it started before all of them.
	// Read only for such an orphan: O(sessions alive), a stat of each leader, once.
	others := func() uint64 {
		h.mu.Lock()
		defer h.mu.Unlock()
		earliest := uint64(math.MaxUint64)
		for pid, l := range h.leaders {
			if l.tag == tag || h.hasExited(pid, l) {
				continue
			}
			if l.start == 0 {
				l.start = proc.StartTime(pid) // unreaped: the pid is still this leader
			}
			earliest = min(earliest, l.start) // 0 (unreadable): it claims everything
		}
		return earliest
	}
	return sessionMembers(h.self, spawner, tag, leaderPid, leaderAlive, liveLeader, sidOf, knownTag, others)
}

// sweep ends every process of the session tagged tag (every descendant with tag ""):
// the kill sequence of package proc — SIGHUP+SIGCONT and SIGTERM to all, then, after the
// grace period or as soon as they are gone, rounds of SIGSTOP+SIGKILL until none is
// left. Each signal goes to the process a walk read, by pid and start (proc.Ref), never to
// a later process that got its pid (proc.Signal). first is called with the processes
// found by the first pass; the same list is returned.
//
// With aside set, sweep returns right after calling first and the escalation goes on in
// its own goroutine (owned by the sweep; it ends when the session's tree is empty).
func (h *helper) sweep(tag string, grace time.Duration, first func([]Survivor), aside bool) []Survivor {
	found := h.members(tag)
	surv := make([]Survivor, 0, len(found))
	for _, p := range found {
		surv = append(surv, Survivor{PID: p.PID, Command: proc.CommandLine(p.PID)})
	}
	proc.Terminate(proc.Refs(found))
	if first != nil {
		first(surv)
	}
	finish := func() {
		if len(found) == 0 && h.gone(tag) {
			h.forget(tag)
			return
		}
		h.escalate(tag, grace)
	}
	if aside {
		go finish()
		return surv
	}
	finish()
	return surv
}

// escalate waits up to grace for the session's processes to go, then kills what is left.
// It returns once that is done, or, when a process outlasted every round of SIGKILLs (one
// in uninterruptible sleep dies only when it leaves it), once the rounds are over: a
// caller waiting on a kill is answered then, and a goroutine it starts goes on killing
// until none is left, then forgets the session.
//
// A process kill(2) refuses with EPERM — another user's, such as what `sudo` runs in the
// session — is given up on: it is left out of the rounds (it would keep the rounds going
// for ever) and named once on stderr (the manager's log).
func (h *helper) escalate(tag string, grace time.Duration) {
	refused := map[int]uint64{} // used by one call of left at a time (the rounds are sequential)
	report := func(pid int) {
		fmt.Fprintf(os.Stderr, "ptyhub-reaper: session %q: process %d (%s) cannot be killed (EPERM: another user's); left running\n", tag, pid, proc.CommandLine(pid))
	}
	left := func() []proc.Ref {
		return settled(func() []proc.Ref { return dropRefused(h.members(tag), refused, signal0, report) })
	}
	if proc.Escalate(left, grace) {
		h.forget(tag)
		return
	}
	go func() {
		for !proc.Escalate(left, 100*time.Millisecond) {
		}
		h.forget(tag)
	}()
}

// left returns the session's live processes; nil only when two scans a moment apart
// found none (see settled).
func (h *helper) left(tag string) []int {
	return settled(func() []int { return pids(h.members(tag)) })
}

// dropRefused returns the processes of ps but those kill(2) refuses with EPERM (kill0
// sends the null signal, which harms no process that took a pid meanwhile), remembered
// in refused by pid and start time so that each is tested and reported (report, once per
// process) only the first time.
func dropRefused(ps []proc.Info, refused map[int]uint64, kill0 func(int) error, report func(int)) []proc.Ref {
	out := make([]proc.Ref, 0, len(ps))
	for _, p := range ps {
		if st, ok := refused[p.PID]; ok && st == p.Start {
			continue
		}
		if errors.Is(kill0(p.PID), syscall.EPERM) {
			refused[p.PID] = p.Start
			report(p.PID)
			continue
		}
		out = append(out, p.Ref())
	}
	return out
}

// signal0 sends pid the null signal: nil, ESRCH (gone) or EPERM (not ours to signal).
func signal0(pid int) error { return syscall.Kill(pid, 0) }

// gone reports whether the session has no live process (see left).
func (h *helper) gone(tag string) bool { return len(h.left(tag)) == 0 }

// settled runs scan once or twice: it returns the first non-empty result, or nil
// when two scans a moment apart both came back empty. A single scan can miss a process
// while its dying parent's children are being re-parented to the reaper (the leader is
// seen alive, then its children list is read after the move), and an escalation that
// took such a miss for the end would stop killing with a member still alive. Every
// "none left" that ends a sweep comes from here, never from one bare scan.
func settled[T any](scan func() []T) []T {
	if l := scan(); len(l) > 0 {
		return l
	}
	time.Sleep(5 * time.Millisecond)
	return scan()
}

// forget drops a session whose leader is gone and whose tree is empty.
func (h *helper) forget(tag string) {
	if tag == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if pid, ok := h.tags[tag]; ok {
		if _, alive := h.leaders[pid]; !alive {
			delete(h.tags, tag)
			if h.sidTag[pid] == tag {
				delete(h.sidTag, pid)
			}
		}
	}
}

// sweepAll ends every process the reaper ever started, with a short grace.
func (h *helper) sweepAll() {
	h.sweep("", 500*time.Millisecond, nil, false)
	h.reap()
}

// closeOnExecAll marks every open fd above 2 close-on-exec.
func closeOnExecAll() {
	for _, fd := range proc.OpenFDs() {
		if fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
