package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/ptyhub/ptyhub/termtext"
	"github.com/ptyhub/ptyhub/transcript"
)

// Completion facts: once a session has ended, its results, its entry in
// ended_since_last_call and in the listing say where a plain-text log of its whole output
// is (the text view, written beside the transcript as <uuid>.log, for an agent's own file
// tools), how much it printed, a digest of the raw output, when it started and ended,
// and its process group.

// Completion is what a session that ended leaves an agent to act on.
type Completion struct {
	// LogPath is a plain-text log of the whole output (absent when recording is off).
	LogPath string `json:"log_path,omitempty"`
	// OutputBytes counts the raw output; OutputLines the lines of its text view.
	OutputBytes int64 `json:"output_bytes,omitempty"`
	OutputLines int64 `json:"output_lines,omitempty"`
	// OutputSHA256 is the sha256 of the raw output (absent when part of it was lost).
	OutputSHA256 string `json:"output_sha256,omitempty"`
	StartedAt    string `json:"started_at,omitempty"`
	EndedAt      string `json:"ended_at,omitempty"`
	// ProcessGroup is the session's process group (and session) id: its leader's pid.
	ProcessGroup int `json:"process_group,omitempty"`
}

// textLog writes the text view of a session's output to <uuid>.log and keeps the digest
// and line count of the raw output: every byte of it, since the recorder holds the hub.
// It is used by the recorder goroutine only. Text is
// converted straight into a buffer and appended to the file when 64 KiB have gathered
// and at the end; the file is open only while the recorder is busy (idle closes it when
// a run of the recorder ends or has waited logIdle for output), so a session whose
// output pauses costs no extra fd, and a flood opens it once rather than once per 64 KiB.
type textLog struct {
	path    string
	f       *os.File // the log's file while the recorder is busy; nil when idle
	pend    []byte   // text not yet written
	started bool     // the file was created (truncated) by this log
	conv    termtext.Converter
	sum     hash.Hash
	lines   int64
	failed  bool  // the log file could not be written
	cap     int64 // text bytes the file may hold (the transcript's cap)
	size    int64 // text bytes written or pending
	dropped int64 // text bytes not written past cap
	midLine bool  // the text written so far ends inside a line
	drop    transcript.PageDropper
}

// logChunk is how much text a textLog gathers before it appends to the file.
const logChunk = 64 << 10

// newTextLog returns the log of session uuid beside the transcript in dir (mode 0600).
// Past limit bytes of text (transcript.DefaultCap when not positive) it stops writing
// and ends the file with a line that says how much was left out; counts and digest go on.
func newTextLog(dir, uuid string, limit int64) *textLog {
	if limit <= 0 {
		limit = transcript.DefaultCap
	}
	return &textLog{sum: sha256.New(), path: transcript.LogPath(dir, uuid), cap: limit}
}

// output takes raw output bytes, in order.
func (l *textLog) output(p []byte) {
	l.sum.Write(p)
	mark := len(l.pend)
	l.pend = l.conv.Write(l.pend, p)
	l.put(mark)
}

// put takes the text appended to pend from mark on: it counts its lines and keeps what
// fits under the cap, then appends pend to the file once a chunk has gathered.
func (l *textLog) put(mark int) {
	text := l.pend[mark:]
	l.lines += int64(bytes.Count(text, []byte{'\n'}))
	if l.failed {
		l.pend = l.pend[:mark]
		return
	}
	if room := l.cap - l.size; int64(len(text)) > room {
		keep := max(room, 0)
		// End on a line (or at least a character) boundary.
		if i := bytes.LastIndexByte(text[:keep], '\n'); i >= 0 {
			keep = int64(i + 1)
		} else {
			for keep > 0 && !utf8.RuneStart(text[keep]) {
				keep--
			}
		}
		l.dropped += int64(len(text)) - keep
		text = text[:keep]
		l.pend = l.pend[:mark+len(text)]
	}
	l.size += int64(len(text))
	if len(text) > 0 {
		l.midLine = text[len(text)-1] != '\n'
	}
	if len(l.pend) >= logChunk {
		l.flush()
	}
}

// flush appends the gathered text to the file, opening it if it is not open.
func (l *textLog) flush() {
	if l.failed || len(l.pend) == 0 && l.started {
		return
	}
	if !l.started {
		l.create()
		if l.failed {
			return
		}
	}
	if l.f == nil {
		f, err := openLog(l.path, syscall.O_APPEND)
		if err != nil {
			l.failed = true
			return
		}
		l.f = f
	}
	n, err := l.f.Write(l.pend)
	l.failed = err != nil
	l.pend = l.pend[:0]
	if !l.failed {
		// The file's pages go from the page cache once written back (a flood's log).
		l.drop.Wrote(l.f, int64(n))
	}
	if l.failed {
		l.idle()
	}
}

// create creates the log's file, empty, and leaves it open (until idle), for a log whose
// file was not made when recording started (createLogFile). A failure is told by the
// log's facts (no log_path), as a failed write is.
func (l *textLog) create() {
	if l.started || l.failed {
		return
	}
	f, err := openLog(l.path, syscall.O_TRUNC|syscall.O_APPEND)
	if err != nil {
		l.failed = true
		return
	}
	l.f, l.started = f, true
}

// openLog opens (creating it, mode 0600) the log's file at path for writing, with flag's
// O_TRUNC and O_APPEND: two system calls (openat, and the F_GETFL of os.NewFile), where
// os.OpenFile also tried the regular file on the runtime's poller and put its blocking
// mode back, four more.
func openLog(path string, flag int) (*os.File, error) {
	fd, err := openCreate(path, flag)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openCreate is open(2) of path for writing, created with mode 0600 if need be, with
// flag's other flags, retried on EINTR.
func openCreate(path string, flag int) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_CLOEXEC|flag, 0o600)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// createLogFile creates a log's file at path, empty (mode 0600), and closes it; the
// recorder calls it when recording starts, while the program starts, so that the end of
// a short command does not wait for a file to be created: creating one costs ~0.02 ms in
// a home directory at rest and up to ~0.9 ms under /tmp on a VM, against an open of an
// existing file. It reports whether the file was made, or failed to be. Two system
// calls: through os.OpenFile, the runtime also tried the file on its poller (which
// refuses a regular file) and put its blocking mode back, five more.
func createLogFile(path string) (made, failed bool) {
	fd, err := openCreate(path, syscall.O_TRUNC)
	if err != nil {
		return false, true
	}
	if syscall.Close(fd) != nil {
		return false, true
	}
	return true, false
}

// idle closes the file until more text is appended (the recorder has caught up).
func (l *textLog) idle() {
	if l.f != nil {
		if err := l.f.Close(); err != nil {
			l.failed = true
		}
		l.f = nil
	}
}

// close finishes the log: the unfinished last line counts as a line.
func (l *textLog) close() {
	mark := len(l.pend)
	l.pend = l.conv.Close(l.pend)
	if len(l.pend) > mark && l.pend[len(l.pend)-1] != '\n' {
		l.pend = append(l.pend, '\n')
	}
	l.put(mark)
	if l.dropped > 0 && !l.failed {
		if l.midLine {
			l.pend = append(l.pend, '\n')
		}
		l.pend = fmt.Appendf(l.pend, "[ptyhub: %d more bytes of text not logged past the %d-byte cap]\n", l.dropped, l.cap)
	}
	l.flush()
	l.idle()
	l.pend = nil
}

// facts fills c from the finished log.
func (l *textLog) facts(c *Completion) {
	if l.started && !l.failed {
		c.LogPath = l.path
	}
	c.OutputLines = l.lines
	c.OutputSHA256 = hex.EncodeToString(l.sum.Sum(nil))
}

// completionWait bounds how long a result waits for a recorder that makes no progress
// to finish the log (a stalled disk).
const completionWait = 2 * time.Second

// awaitDone waits for the recorder to finish the transcript and the log for as long as it
// keeps copying output: a recorder at most a ring behind (it holds the hub) always ends,
// but on a loaded machine that may take longer than completionWait; one that copied
// nothing for completionWait is given up on.
func (r *recorder) awaitDone() {
	t := time.NewTimer(completionWait)
	defer t.Stop()
	last := r.copied.Load()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
			now := r.copied.Load()
			if now == last {
				return
			}
			last = now
			t.Reset(completionWait)
		}
	}
}

// completion returns the completion facts of s, or nil while it runs. With wait, it
// waits (at most completionWait) for the recorder to finish the log. The log's path is
// given only once it is whole; until then the counts and digest come from memory when it
// still holds all the output.
func (s *Session) completion(wait bool) *Completion {
	if !s.isExited() {
		return nil
	}
	s.mu.Lock()
	c := &Completion{StartedAt: s.started.UTC().Format(time.RFC3339Nano), EndedAt: s.exitedAt.UTC().Format(time.RFC3339Nano),
		ProcessGroup: s.pid}
	s.mu.Unlock()
	c.OutputBytes = s.hub.End()
	if r := s.rec; r != nil {
		if wait {
			r.awaitDone()
		}
		select {
		case <-r.done:
			r.mu.Lock()
			log := r.log
			r.mu.Unlock()
			if log != nil {
				log.facts(c)
				return c
			}
		default:
		}
	}
	// No log (recording off, or not finished): count and digest the output if memory
	// still has all of it.
	if s.hub.Start() == 0 && s.hub.Closed() {
		data, from := s.hub.Tail(int(c.OutputBytes))
		if from == 0 && int64(len(data)) == c.OutputBytes {
			sum := sha256.Sum256(data)
			c.OutputSHA256 = hex.EncodeToString(sum[:])
			text := termtext.String(data)
			c.OutputLines = int64(bytes.Count([]byte(text), []byte{'\n'}))
			if len(text) > 0 && text[len(text)-1] != '\n' {
				c.OutputLines++
			}
		}
	}
	return c
}
