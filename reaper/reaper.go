// Package reaper runs the helper process that starts, reaps and kills the process trees
// of sessions.
//
// One reaper serves one manager. It is the same binary re-executed (an init hook in this
// package takes over when the environment says so), so any program that imports this
// package can run sessions. The reaper is a child subreaper (PR_SET_CHILD_SUBREAPER):
// daemons that escape their session with setsid re-parent to it, so a kill finds them. It
// owns every wait (one wait4(-1) loop), so no exit status is stolen. When its socket to the
// manager closes — the manager exited or was killed with SIGKILL — it kills every process
// it started and exits, so nothing outlives a crashed manager.
package reaper

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/proc"
)

// EnvSession is the variable every session's processes carry (value: the session UUID).
// The reaper uses it to find escaped daemons of a session after their parents died.
const EnvSession = "PTYHUB_SESSION"

// DefaultGrace is how long a kill waits after SIGTERM before SIGKILL.
const DefaultGrace = 2 * time.Second

// ErrDead is returned once the reaper process is gone.
var ErrDead = errors.New("reaper: helper process is gone")

// Survivor is a process found in a session's tree when it was swept.
type Survivor struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

// Spec says what to start.
type Spec struct {
	Path string   // resolved program path
	Argv []string // argv[0] included
	Env  []string
	Dir  string
	Ctty bool   // make stdin the controlling terminal (stdin must be a pty slave)
	Tag  string // the session UUID; also expected in Env as PTYHUB_SESSION
	// Hold leaves the leader unreaped when it exits, so the caller can read its status
	// from /proc (ExitStatusOf) without waiting for the reaper, and must then call
	// Release. Its exit channel then only reports the reaper's death.
	Hold bool
	// OnExit, if set, is called once with the leader's Exit, right after it was sent on
	// the exit channel, from the reaper's goroutine, with no lock held; it must not block.
	// A caller can so learn of the exit with no goroutine waiting on the channel. With
	// Hold that happens only when the reaper dies: a caller waiting for the held leader
	// another way (its pidfd) learns then that the wait is over.
	OnExit func(Exit)
}

// Exit is the end of a leader: its raw wait status, or Err when the reaper died first.
type Exit struct {
	Status syscall.WaitStatus
	// Survivors are the processes of the session that outlived the leader; the reaper
	// is killing them (HUP+CONT, TERM, then KILL after the grace period).
	Survivors []Survivor
	Err       error
}

// reply is a response, with the exit channel of a spawned leader.
type reply struct {
	*msg
	exit chan Exit
}

// pendingCall is a call waiting for its reply; onExit is the Spec's OnExit of a spawn.
type pendingCall struct {
	ch     chan reply
	onExit func(Exit)
}

// leaderExit is where a spawned leader's exit goes: its channel, then its OnExit.
type leaderExit struct {
	ch     chan Exit
	onExit func(Exit)
}

// send gives the leader its exit on the channel and returns the call of its OnExit (nil
// without one), which the caller makes once it released r.mu.
func (l leaderExit) send(e Exit) func() {
	l.ch <- e
	if l.onExit == nil {
		return nil
	}
	return func() { l.onExit(e) }
}

// Reaper is the manager's handle on its helper process. Safe for concurrent use.
type Reaper struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	log  *slog.Logger
	wmu  sync.Mutex // serialises messages to the helper; guards wbuf
	wbuf []byte     // the encoding of the message being sent (see send)

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]pendingCall
	exits   map[int]leaderExit
	dead    bool
	leaders map[int]string // pid → tag of leaders not yet released or reaped
	tags    map[string]int // tag → leader pid, kept for attributing orphans by session id
	spawner int            // the reaper's thread that forks leaders (0: not known yet)

	done chan struct{} // closed when the helper process has exited and been waited for
}

// helperRuntimeVars are the variables of the manager's environment the helper keeps:
// the Go runtime's own settings. The helper needs nothing else (each spawn carries its
// program's environment), and every session can read its parent's environment
// (/proc/$PPID/environ): the manager's credentials must not sit there.
var helperRuntimeVars = []string{"GODEBUG", "GOTRACEBACK", "GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GORACE", "GOCOVERDIR"}

// helperEnviron returns the helper's environment: the marker and helperRuntimeVars.
//
// A binary built with the race detector (the tests') sleeps 1 s when it exits, by
// default, to catch races at exit; every Manager.Close waits for its helper's exit, so a
// race-built helper is told not to (atexit_sleep_ms=0 in GORACE), unless GORACE sets it.
func helperEnviron() []string {
	env := []string{helperEnv + "=1"}
	for _, k := range helperRuntimeVars {
		v, ok := os.LookupEnv(k)
		if k == "GORACE" && raceBuild && !strings.Contains(v, "atexit_sleep_ms") {
			v, ok = strings.TrimSpace(v+" atexit_sleep_ms=0"), true
		}
		if ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Start launches the helper process. logger may be nil.
func Start(logger *slog.Logger) (*Reaper, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	exe := proc.Executable()
	fds, err := socketPair()
	if err != nil {
		return nil, fmt.Errorf("reaper: socketpair: %w", err)
	}
	local, remote := os.NewFile(uintptr(fds[0]), "reaper"), os.NewFile(uintptr(fds[1]), "reaper-remote")
	defer remote.Close()
	cmd := exec.Command(exe)
	cmd.Args[0] = "ptyhub-reaper"
	cmd.Env = helperEnviron()
	cmd.ExtraFiles = []*os.File{remote}
	cmd.Stderr = os.Stderr
	// Its own process group: a ^C typed at the manager's terminal must not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		local.Close()
		return nil, fmt.Errorf("reaper: start helper: %w", err)
	}
	fc, err := net.FileConn(local)
	local.Close()
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("reaper: %w", err)
	}
	r := &Reaper{cmd: cmd, conn: fc.(*net.UnixConn), log: logger,
		pending: map[uint64]pendingCall{}, exits: map[int]leaderExit{}, done: make(chan struct{}),
		leaders: map[int]string{}, tags: map[string]int{}}
	// The read loop: owned by the Reaper, ends when the helper closes the socket or dies.
	go r.readLoop()
	// The waiter: one goroutine blocked in Wait for the helper's whole life.
	go func() {
		err := cmd.Wait()
		r.conn.Close()
		if err != nil {
			r.log.Debug("reaper exited", "err", err)
		}
		r.fail()
		close(r.done)
	}()
	return r, nil
}

func (r *Reaper) readLoop() {
	buf, oob := make([]byte, maxPacket), make([]byte, unix.CmsgSpace(4*8))
	for {
		m, fds, err := recv(r.conn, buf, oob)
		if err != nil {
			r.fail()
			return
		}
		closeAll(fds)
		var woken func()
		r.mu.Lock()
		switch m.Op {
		case opReply:
			if pc, ok := r.pending[m.ID]; ok {
				delete(r.pending, m.ID)
				rep := reply{msg: m}
				if m.Pid > 0 && m.Err == "" {
					// Registered before any later message (the exit) is read.
					rep.exit = make(chan Exit, 1)
					r.exits[m.Pid] = leaderExit{ch: rep.exit, onExit: pc.onExit}
				}
				pc.ch <- rep
			}
		case opExit:
			if t, ok := r.leaders[m.Pid]; ok {
				delete(r.tags, t)
			}
			delete(r.leaders, m.Pid)
			if l, ok := r.exits[m.Pid]; ok {
				delete(r.exits, m.Pid)
				woken = l.send(Exit{Status: syscall.WaitStatus(m.Status), Survivors: m.Survivors})
			}
		}
		r.mu.Unlock()
		if woken != nil {
			woken()
		}
	}
}

// fail marks the reaper dead: pending calls fail and every leader's exit channel reports
// ErrDead.
func (r *Reaper) fail() {
	var woken []func()
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		return
	}
	r.dead = true
	for id, pc := range r.pending {
		pc.ch <- reply{msg: &msg{Err: ErrDead.Error()}}
		delete(r.pending, id)
	}
	for pid, l := range r.exits {
		if f := l.send(Exit{Err: ErrDead}); f != nil {
			woken = append(woken, f)
		}
		delete(r.exits, pid)
	}
	r.mu.Unlock()
	for _, f := range woken {
		f()
	}
}

func (r *Reaper) call(m *msg, fds []int) (reply, error) {
	return r.callSpawn(m, fds, nil)
}

// callSpawn is call; a spawn's reply registers the leader's exit with onExit (see
// Spec.OnExit).
func (r *Reaper) callSpawn(m *msg, fds []int, onExit func(Exit)) (reply, error) {
	ch := make(chan reply, 1)
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		return reply{}, ErrDead
	}
	r.nextID++
	m.ID = r.nextID
	r.pending[m.ID] = pendingCall{ch: ch, onExit: onExit}
	r.mu.Unlock()
	r.wmu.Lock()
	err := send(r.conn, &r.wbuf, m, fds)
	r.wmu.Unlock()
	if err != nil {
		r.mu.Lock()
		delete(r.pending, m.ID)
		r.mu.Unlock()
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			// The helper is gone; its waiter may not have noticed yet.
			return reply{}, fmt.Errorf("%w (%v)", ErrDead, err)
		}
		return reply{}, err
	}
	resp := <-ch
	if resp.Err == ErrDead.Error() {
		return reply{}, ErrDead
	}
	return resp, nil
}

// Spawn starts spec with the given stdin, stdout and stderr (the caller keeps and closes
// its copies). It returns the leader's pid and a channel that receives its exit once.
func (r *Reaper) Spawn(spec Spec, stdin, stdout, stderr *os.File) (int, <-chan Exit, error) {
	resp, err := r.callSpawn(&msg{Op: opSpawn, Path: spec.Path, Argv: spec.Argv, Env: spec.Env,
		Dir: spec.Dir, Ctty: spec.Ctty, Tag: spec.Tag, Hold: spec.Hold},
		[]int{int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd())}, spec.OnExit)
	if err != nil {
		return 0, nil, err
	}
	if resp.Err != "" {
		if resp.Errno != 0 {
			return 0, nil, &os.PathError{Op: "exec", Path: spec.Path, Err: syscall.Errno(resp.Errno)}
		}
		return 0, nil, fmt.Errorf("reaper: spawn: %s", resp.Err)
	}
	r.mu.Lock()
	r.leaders[resp.Pid] = spec.Tag
	r.tags[spec.Tag] = resp.Pid
	r.spawner = resp.Spawner
	r.mu.Unlock()
	return resp.Pid, resp.exit, nil
}

// Release reaps a held leader that has exited and starts sweeping what is left of its
// session (HUP+CONT, TERM, KILL after the grace period). It returns the leader's wait
// status and the processes found, as the reaper saw them.
func (r *Reaper) Release(tag string, pid int) (Exit, error) {
	resp, err := r.call(&msg{Op: opRelease, Tag: tag, Pid: pid}, nil)
	if err != nil {
		return Exit{}, err
	}
	r.mu.Lock()
	delete(r.leaders, pid)
	delete(r.exits, pid)
	delete(r.tags, tag)
	r.mu.Unlock()
	if resp.Err != "" {
		return Exit{}, errors.New(resp.Err)
	}
	return Exit{Status: syscall.WaitStatus(resp.Status), Survivors: resp.Survivors}, nil
}

// Survivors lists, from this process, the live processes of the session tagged tag other
// than its leader — what a sweep would kill. Used on the exit path, where asking the
// reaper would cost a round trip.
func (r *Reaper) Survivors(tag string) []Survivor {
	r.mu.Lock()
	leaderPid, spawner := r.tags[tag], r.spawner
	r.mu.Unlock()
	// Lookups, not copies: an exit costs O(its session), not O(sessions alive).
	live := func(pid int) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		_, ok := r.leaders[pid]
		return ok
	}
	sidOf := func(sid int) (string, bool) {
		r.mu.Lock()
		defer r.mu.Unlock()
		t, ok := r.leaders[sid]
		return t, ok
	}
	// As the reaper's own sweep judges an orphan nothing names (see sessionMembers): the
	// earliest start of the other sessions' leaders alive (a leader not yet released is
	// unreaped, so its pid is still its own; an exited one is a zombie, start 0, and
	// claims nothing here).
	others := func() uint64 {
		r.mu.Lock()
		var pids []int
		for pid, t := range r.leaders {
			if t != tag {
				pids = append(pids, pid)
			}
		}
		r.mu.Unlock()
		earliest := uint64(math.MaxUint64)
		for _, pid := range pids {
			if p, err := proc.Stat(pid); err == nil && !p.Dead() {
				earliest = min(earliest, p.Start)
			}
		}
		return earliest
	}
	var out []Survivor
	for _, p := range sessionMembers(r.cmd.Process.Pid, spawner, tag, leaderPid, false, live, sidOf, nil, others) {
		if p.PID != leaderPid {
			out = append(out, Survivor{PID: p.PID, Command: proc.CommandLine(p.PID)})
		}
	}
	return out
}

// ExitStatusOf reads the wait status of an exited, unreaped (held) process without
// reaping it (see proc.ExitStatus). ok is false when the process is not a zombie or the
// status is unreadable.
func ExitStatusOf(pid int) (ws syscall.WaitStatus, ok bool) { return proc.ExitStatus(pid) }

// CanReadExitStatus reports whether this process may read exit statuses of the reaper's
// children (see proc.CanReadExitStatus). Without it the kernel shows 0 for every exit
// code, so holding leaders would be wrong.
func (r *Reaper) CanReadExitStatus() bool {
	if !kernelPaths {
		return false // the portable paths never hold leaders
	}
	return proc.CanReadExitStatus(r.cmd.Process.Pid)
}

// Kill ends every process of the session tagged tag: SIGHUP+SIGCONT and SIGTERM, then
// SIGKILL after grace for whatever is left, until nothing is. It returns the processes
// found, as soon as the first signals went out (wait false) or once all are gone (wait true).
func (r *Reaper) Kill(tag string, grace time.Duration, wait bool) ([]Survivor, error) {
	resp, err := r.call(&msg{Op: opKill, Tag: tag, GraceMs: int(grace / time.Millisecond), Wait: wait}, nil)
	if err != nil {
		return nil, err
	}
	if resp.Err != "" {
		return nil, errors.New(resp.Err)
	}
	return resp.Survivors, nil
}

// SignalGroup sends sig to the leader's process group while the leader is unreaped.
func (r *Reaper) SignalGroup(tag string, sig syscall.Signal) error {
	resp, err := r.call(&msg{Op: opSignal, Tag: tag, Sig: int(sig)}, nil)
	if err != nil {
		return err
	}
	if resp.Err != "" {
		return errors.New(resp.Err)
	}
	return nil
}

// Close asks the helper to end every process it started and waits for it to exit (at
// most timeout, then it is killed).
func (r *Reaper) Close(timeout time.Duration) error {
	go r.call(&msg{Op: opShutdown}, nil)
	select {
	case <-r.done:
		return nil
	case <-time.After(timeout):
		r.cmd.Process.Kill()
		<-r.done
		return errors.New("reaper: helper did not exit in time; killed")
	}
}

// Pid is the helper's process id.
func (r *Reaper) Pid() int { return r.cmd.Process.Pid }

// Done is closed once the helper process has exited and been waited for, whether asked
// to (Close) or not (it was killed).
func (r *Reaper) Done() <-chan struct{} { return r.done }

// Dead reports whether the helper is gone: calls fail with ErrDead.
func (r *Reaper) Dead() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dead
}

// ExitText says how the helper ended ("signal: killed", "exit status 1"); "" while it
// runs.
func (r *Reaper) ExitText() string {
	select {
	case <-r.done:
		if st := r.cmd.ProcessState; st != nil {
			return st.String()
		}
	default:
	}
	return ""
}
