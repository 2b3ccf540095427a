//go:build linux

package ptyhub_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/internal/testtool/proctest"
	"github.com/ptyhub/ptyhub/session"
)

// waitNoProcs waits until no live process carries kv in its environment: on each one's
// pidfd, which becomes readable when it exits. It fails if some are still alive after a
// generous bound.
func waitNoProcs(t *testing.T, kv string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := proctest.WithEnv(kv)
		if len(left) == 0 {
			return
		}
		for _, pid := range left {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue // gone
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, _ := unix.Poll(fds, max(int(time.Until(deadline).Milliseconds()), 0))
			unix.Close(fd)
			if n == 0 {
				t.Fatalf("processes with %s still alive: %v", kv, proctest.WithEnv(kv))
			}
		}
	}
}

// The leader's exit ends the call at once, though a descendant still holds the terminal
// (a setsid job keeps the slave open, so end of file would come only when it ends).
func TestEdgeExitBeforeEOF(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: `setsid sleep 600 & echo hi`, YieldTimeMs: new(int64(60000))})
	if r.State != session.StateExited || r.ExitCode == nil || *r.ExitCode != 0 || r.Output != "hi\n" {
		t.Fatalf("got %+v, want hi and exit 0 before the yield", r)
	}
	waitNoProcs(t, "PTYHUB_SESSION="+r.UUID)
}

// Background jobs are killed when the leader exits, whatever they do about the hangup:
// plain, nohup, trap ” HUP, and a setsid escaper.
func TestEdgeBackgroundJobsKilled(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: `sleep 1001 & nohup sleep 1002 >/dev/null 2>&1 & (trap '' HUP; exec sleep 1003) & setsid sleep 1004 </dev/null >/dev/null 2>&1 & sleep 0.2; echo started`})
	out, r := untilExit(t, c, r)
	if out != "started\n" {
		t.Errorf("output %q", out)
	}
	waitNoProcs(t, "PTYHUB_SESSION="+r.UUID)
}

// Agent sessions get a UTF-8 locale when none is set.
func TestEdgeLocale(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Argv: []string{"python3", "-c", `print("\u00e9")`}, ClearEnv: true,
		Env: map[string]string{"PATH": os.Getenv("PATH")}})
	out, _ := untilExit(t, c, r)
	if out != "é\n" {
		t.Errorf("python3 printed %q, want é", out)
	}
}

// NUL and other C0 bytes reach the program exactly.
func TestEdgeNULAndControlBytes(t *testing.T) {
	t.Parallel()
	// The input is written before `stty raw` runs; only held typeahead (until the program
	// reads the terminal) keeps DEL from erasing in cooked mode.
	testtool.KernelOnly(t, "holding typeahead until the program reads the terminal needs /proc wait channels")
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: `stty raw -echo; head -c 5 | od -An -tx1`, YieldTimeMs: new(int64(0))})
	w := write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "a\u0000\u0001\u007fb", YieldTimeMs: new(int64(20000))})
	out, _ := untilExit(t, c, w)
	if !strings.Contains(out, "61 00 01 7f 62") {
		t.Errorf("od saw %q, want 61 00 01 7f 62", out)
	}
}

// The session's terminal is not writable by other users.
func TestEdgeSlavePermissions(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := untilExit(t, c, exec(t, c, session.ExecRequest{Cmd: `stat -c '%a %U' "$(tty)"`}))
	mode, owner, _ := strings.Cut(strings.TrimSpace(out), " ")
	if (mode != "600" && mode != "620") || owner != u.Username {
		t.Errorf("terminal is %q, want mode 600 or 620 owned by %s", out, u.Username)
	}
}

// A payload over the input limit is refused; 512 KiB into a raw-mode program arrive
// byte for byte.
func TestEdgeHugePayload(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	dir := t.TempDir()
	const n = 512 << 10
	r := exec(t, c, session.ExecRequest{Cmd: fmt.Sprintf(`stty raw -echo; head -c %d > f; sha256sum f`, n), Workdir: dir, YieldTimeMs: new(int64(0))})
	if _, err := c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, Chars: strings.Repeat("x", 2<<20)}); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("2 MiB write: %v, want ErrInvalid", err)
	}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%07d é\t\u0001\n", i)
	}
	payload := b.String()[:n]
	sum := sha256.Sum256([]byte(payload))
	w := write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: payload, YieldTimeMs: new(int64(60000))})
	out, _ := untilExit(t, c, w)
	if !strings.Contains(out, hex.EncodeToString(sum[:])) {
		t.Errorf("sha256sum printed %q, want %x", out, sum)
	}
}

// Two writers of 1,000 lines of 1 KiB each, at once: every line arrives whole.
func TestEdgeConcurrentWriters(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	dir := t.TempDir()
	const writers, lines, size = 2, 1000, 1024
	r := exec(t, c, session.ExecRequest{Cmd: fmt.Sprintf(`stty raw -echo; head -c %d > f; echo done`, writers*lines*size), Workdir: dir, YieldTimeMs: new(int64(0))})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				line := fmt.Sprintf("w%d-%04d ", w, i)
				line += strings.Repeat(string(rune('a'+w)), size-len(line)-1) + "\n"
				if _, err := c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID, Chars: line, YieldTimeMs: new(int64(0))}); err != nil {
					t.Errorf("writer %d line %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	untilExit(t, c, write(t, c, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(60000)), WaitFor: "done"}))
	data, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	seen := map[string]bool{}
	for _, l := range got {
		name, body, _ := strings.Cut(l, " ")
		if len(name) < 2 {
			t.Fatalf("line %q is not whole", l[:min(len(l), 40)])
		}
		w := name[1] - '0'
		if len(l) != size-1 || strings.Trim(body, string(rune('a'+w))) != "" || seen[name] {
			t.Fatalf("line %q (%d bytes) is not whole or repeats", l[:min(len(l), 40)], len(l))
		}
		seen[name] = true
	}
	if len(seen) != writers*lines {
		t.Errorf("%d distinct lines, want %d", len(seen), writers*lines)
	}
}

// The server that a client starts is in its own session with no controlling terminal,
// so closing the terminal it was started from cannot hang it up; and it listens on no
// network socket (every socket it holds is a Unix socket).
func TestEdgeServerDetachedAndUnixOnly(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	h.ok("ls")
	pid := h.serverPID()
	if pid == 0 {
		t.Fatal("no server")
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	// After the command: state, ppid, pgrp, session, tty_nr.
	if f[3] != strconv.Itoa(pid) || f[4] != "0" {
		t.Errorf("server %d: session %s, tty %s; want its own session and no terminal", pid, f[3], f[4])
	}
	unixInodes, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	sockets := 0
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		ino, ok := strings.CutPrefix(l, "socket:[")
		if err != nil || !ok {
			continue
		}
		sockets++
		ino = strings.TrimSuffix(ino, "]")
		if !strings.Contains(string(unixInodes), " "+ino+" ") {
			t.Errorf("server fd %s is socket %s, not a Unix socket", fd.Name(), ino)
		}
	}
	if sockets == 0 {
		t.Error("server holds no socket at all")
	}
}

// Stopped processes: a leader stopped by SIGSTOP (which no terminal key can resume, its
// process group being orphaned) is continued, as tmux does; a stopped job is still ended
// by a kill, whose sequence continues what it signals.
func TestEdgeStoppedProcesses(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: `kill -STOP $$; echo resumed`, YieldTimeMs: new(int64(60000))})
	out, r := untilExit(t, c, r)
	if out != "resumed\n" || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("stopped leader: %q %+v", out, r)
	}
	r = exec(t, c, session.ExecRequest{Cmd: `sleep 1000 & kill -STOP $!; echo ready; read x`, WaitFor: "ready", YieldTimeMs: new(int64(60000))})
	k, err := c.Kill(context.Background(), session.KillRequest{SessionID: r.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if k.State != session.StateExited {
		t.Errorf("kill of a session with a stopped job: %+v", k)
	}
	waitNoProcs(t, "PTYHUB_SESSION="+r.UUID)
}

// Detaching from a full-screen program leaves the human's terminal as it was: main
// screen, cursor shown, mouse reporting, bracketed paste and application cursor keys
// off, pen reset; attaching again redraws the program.
func TestEdgeDetachFromTUIResetsModes(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	out := h.ok("exec", "--json", "--wait-for", "TUI", "--", "bash", "-c",
		`printf '\033[?1049h\033[?1000h\033[?1006h\033[?2004h\033[?1h\033=\033[?25l\033[7mTUI'; read x`)
	var r session.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("exec: %v %s", err, out)
	}
	tm := h.attach(24, 80, true, r.SessionID)
	off := tm.waitFor(0, "TUI") // the repaint
	tm.typ("\x1d")              // ctrl-]: detach
	if code := tm.wait(); code != 0 {
		t.Errorf("attach exit status %d", code)
	}
	end := tm.waitFor(off, "\x1b[0m\x1b[?25h") // the end of the resets
	tm.mu.Lock()
	after := tm.screen.String()[off:end]
	tm.mu.Unlock()
	for _, reset := range []string{"\x1b[?1049l", "\x1b[?25h", "\x1b[?1000l", "\x1b[?1006l", "\x1b[?2004l", "\x1b[?1l", "\x1b>", "\x1b[0m"} {
		if !strings.Contains(after, reset) {
			t.Errorf("after the detach the terminal did not get %q: %q", reset, after)
		}
	}
	tm.sane()
	tm2 := h.attach(24, 80, true, r.SessionID)
	tm2.waitFor(0, "TUI")
	tm2.typ("\x1d")
	tm2.wait()
	h.ok("kill", r.SessionID)
}

// A session that keeps forking while it is killed (each job in its own process group)
// is still emptied by the kill.
func TestEdgeForkStorm(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Cmd: `set -m; while :; do sleep 1000 & done`, YieldTimeMs: new(int64(0))})
	// The storm grows at the machine's fork rate: about 13 jobs a second on a loaded
	// 2-core VM, so 200 can take longer than svWait's bound.
	waitLong(t, "200 forked jobs", func() bool { return len(proctest.WithEnv("PTYHUB_SESSION="+r.UUID)) >= 200 })
	k, err := c.Kill(context.Background(), session.KillRequest{SessionID: r.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if k.State != session.StateExited {
		t.Errorf("kill during a fork storm: %+v", k)
	}
	waitNoProcs(t, "PTYHUB_SESSION="+r.UUID)
}
