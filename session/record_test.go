package session

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/transcript"
)

// TestMain points XDG_STATE_HOME at a temporary directory, so that no test or example of
// this package (many use Options{} without a StateDir) records into the real home.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ptyhub-session-state")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestRecordingFailureCostsOnlyTheTranscript: a state directory that cannot be used (a
// symlink, a file) or recording turned off leaves the session working, with no
// transcript, and a log line.
func TestRecordingFailureCostsOnlyTheTranscript(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	os.Mkdir(filepath.Join(base, "elsewhere"), 0o700)
	os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(base, "link"))
	os.MkdirAll(filepath.Join(base, "link-state"), 0o700)
	os.Symlink(filepath.Join(base, "elsewhere"), filepath.Join(base, "link-state", "sessions"))
	os.WriteFile(filepath.Join(base, "file"), nil, 0o600)
	cases := []struct {
		name string
		opts Options
		log  bool
	}{
		{"sessions dir is a symlink", Options{StateDir: filepath.Join(base, "link-state")}, true},
		{"state dir is a file", Options{StateDir: filepath.Join(base, "file")}, true},
		{"recording off", Options{StateDir: filepath.Join(base, "off"), NoRecord: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs testtool.Buffer
			tc.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			m, err := NewManager(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			c := m.NewClient("t")
			y := int64(10000)
			r, err := c.Exec(context.Background(), ExecRequest{Cmd: "echo fine", YieldTimeMs: &y})
			if err != nil || r.Output != "fine\n" || r.State != StateExited {
				t.Fatalf("session affected: %+v, %v", r, err)
			}
			// The recorder creates its files in its own goroutine, after Exec may have
			// returned: wait until it has tried (ready), not for the call.
			s, err := m.lookup(r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if s.rec != nil {
				<-s.rec.ready
			}
			if got := strings.Contains(logs.String(), "transcript: not recording"); got != tc.log {
				t.Errorf("logged %v, want %v: %s", got, tc.log, logs.String())
			}
			ents, _ := os.ReadDir(filepath.Join(base, "elsewhere"))
			if len(ents) > 0 {
				t.Errorf("wrote through the symlink: %v", ents)
			}
		})
	}
}

// TestRecorderNilSafe: every hook works on a nil recorder (recording off).
func TestRecorderNilSafe(t *testing.T) {
	var r *recorder
	r.input([]byte("x"), false, false)
	r.input([]byte("x"), true, false)
	r.resize(1, 1)
	r.exit()
	r.stop()
	if r.readAt(make([]byte, 1), 0) != 0 {
		t.Error("nil recorder read something")
	}
}

// TestTranscriptPath: the manager names the transcript of a session by any of its ids.
func TestTranscriptPath(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	m, err := NewManager(Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	y := int64(10000)
	r, err := m.NewClient("t").Exec(context.Background(), ExecRequest{Cmd: "echo hi", YieldTimeMs: &y})
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := transcript.SessionsDir(state)
	for _, id := range []string{r.SessionID, r.UUID, r.UUID[:13]} {
		p, err := m.TranscriptPath(id)
		if err != nil || p != transcript.Path(dir, r.UUID) {
			t.Errorf("TranscriptPath(%s) = %q, %v", id, p, err)
		}
	}
	m.Close(context.Background())
	// Close finished the transcript and removed the spill.
	in, err := transcript.Find(dir, r.UUID)
	if err != nil || in.Ended != "exited with code 0" || in.Live {
		t.Errorf("after Close: %+v, %v", in, err)
	}
	if _, err := os.Stat(transcript.SpillPath(dir, r.UUID)); !os.IsNotExist(err) {
		t.Errorf("spill left after Close: %v", err)
	}
}

// TestTextLogCreatedAtStart: the text log is created when recording starts, with the
// transcript, not when the session ends or its first 64 KiB of text gathered: a short
// command's end does not wait for a file to be created, and a running session's log can
// be followed from its start.
func TestTextLogCreatedAtStart(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	m, err := NewManager(Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	y := int64(0)
	r, err := m.NewClient("t").Exec(context.Background(), ExecRequest{Argv: []string{"cat"}, YieldTimeMs: &y})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.lookup(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	// The recorder creates the log right after the transcript (ready); before, it did
	// when the session ended, so the file never came while cat waited. The bound is
	// only there to end the test on that code.
	<-s.rec.ready
	dir, _ := transcript.SessionsDir(state)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		_, err := os.Stat(transcript.LogPath(dir, r.UUID))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the text log of a running session that printed nothing: %v", err)
		}
	}
	if s.isExited() {
		t.Errorf("cat ended: %+v", r)
	}
}

// TestReaderFlushesAtEveryPause: the readers woken per batch (transcript, screen
// answerer, a collect in a flood) rely on the session's reader flushing the hub each time
// the output pauses. A burst far smaller than a batch must wake a batch waiter registered
// before it, on a terminal and on pipes, with no more output after it.
func TestReaderFlushesAtEveryPause(t *testing.T) {
	t.Parallel()
	for _, tty := range []bool{true, false} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			m, err := NewManager(Options{StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(context.Background())
			c := m.NewClient("t")
			zero := int64(0)
			r, err := c.Exec(context.Background(), ExecRequest{Cmd: "exec cat", TTY: &tty, YieldTimeMs: &zero})
			if err != nil {
				t.Fatal(err)
			}
			s, err := m.lookup(r.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				woken := s.hub.NotifyBatch(s.hub.End())
				if _, err := c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: fmt.Sprintf("burst %d\n", i), YieldTimeMs: &zero}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-woken:
				case <-time.After(time.Minute):
					t.Fatalf("burst %d: a batch waiter was not woken when the output paused (hub end %d)", i, s.hub.End())
				}
			}
		})
	}
}

// TestRecorderRunStaysForAStop: a recorder run that has read the end of the output does
// not end while a stop is pending (a stop that came after the run took its events would
// otherwise be lost: its poke found the run under way, and no run would finish the
// transcript), nor while events wait; with neither, it ends.
func TestRecorderRunStaysForAStop(t *testing.T) {
	r := &recorder{running: true}
	r.stopping = true
	if r.pause(true) {
		t.Fatal("a run at the end of the output ended with a stop pending")
	}
	r.stopping = false
	r.events = []recEvent{{code: 'x'}}
	if r.pause(true) {
		t.Fatal("a run ended with an event waiting")
	}
	r.events = nil
	if !r.pause(true) || r.running {
		t.Fatal("a run at the end of the output with nothing pending did not end")
	}
	r.running = true
	if r.pause(false) {
		t.Fatal("a run ended while the reader had not found the output quiet")
	}
	r.quiet = true
	if !r.pause(false) {
		t.Fatal("a run caught up with quiet output did not end")
	}
}

// TestRecorderInputWaitsForOutput: typed input does not start a recorder run of its own
// (the program's answer starts one, which writes both); a program that prints nothing
// still gets its input into the transcript, inputLag later, while it runs.
func TestRecorderInputWaitsForOutput(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	m, err := NewManager(Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	y := int64(20000)
	res, err := m.NewClient("t").Exec(context.Background(), ExecRequest{Cmd: "stty -echo; exec cat >/dev/null", YieldTimeMs: &y})
	if err != nil || res.ReturnedBecause != BecauseWaitingForInput {
		t.Fatalf("cat: %+v, %v", res, err)
	}
	s, err := m.lookup(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	r := s.rec
	<-r.ready
	idle := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return !r.running && len(r.events) == 0
	}
	for deadline := time.Now().Add(time.Minute); !idle(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the recorder never went idle beside a silent program")
		}
	}
	// A descheduled test can let inputLag pass between the input and the look once, not
	// every time.
	waited := false
	for i := 0; i < 20 && !waited; i++ {
		t0 := time.Now()
		r.input(fmt.Appendf(nil, "typed %d\n", i), false, false)
		r.mu.Lock()
		running, queued := r.running, len(r.events)
		r.mu.Unlock()
		if time.Since(t0) < inputLag {
			if running || queued == 0 {
				t.Fatalf("input started a recorder run at once (running %v, %d events queued)", running, queued)
			}
			waited = true
		}
	}
	if !waited {
		t.Fatal("inputLag passed between every input and the look")
	}
	dir, _ := transcript.SessionsDir(state)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		data, _ := os.ReadFile(transcript.Path(dir, res.UUID))
		if strings.Contains(string(data), `"i", "typed 0\n"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the input to a program that prints nothing never reached the transcript: %s", data)
		}
	}
	if s.isExited() {
		t.Error("cat ended")
	}
}

// TestRecorderInputOfACallNeedsNoTimer: input a call writes itself, to a program that
// prints nothing, reaches the transcript once the call has collected, without the
// recorder's input timer (setting one costs the runtime a wake of its poller's thread
// at every turn): the call's end pokes the recorder.
func TestRecorderInputOfACallNeedsNoTimer(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	m, err := NewManager(Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	y := int64(20000)
	res, err := c.Exec(context.Background(), ExecRequest{Cmd: "stty -echo; exec cat >/dev/null", YieldTimeMs: &y})
	if err != nil || res.ReturnedBecause != BecauseWaitingForInput {
		t.Fatalf("cat: %+v, %v", res, err)
	}
	s, err := m.lookup(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Write(context.Background(), WriteRequest{SessionID: res.SessionID, Chars: "typed\n", YieldTimeMs: &y})
	if err != nil || w.QueuedBytes != 0 {
		t.Fatalf("write: %+v, %v", w, err)
	}
	dir, _ := transcript.SessionsDir(state)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		data, _ := os.ReadFile(transcript.Path(dir, res.UUID))
		if strings.Contains(string(data), `"m", "[6 bytes of hidden input]"`) || strings.Contains(string(data), `"i", "typed\n"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the input to a program that prints nothing never reached the transcript: %s", data)
		}
	}
	s.rec.mu.Lock()
	timer := s.rec.inputT != nil
	s.rec.mu.Unlock()
	if timer {
		t.Error("the recorder set its input timer for input written by the call itself")
	}
}

// heldUnrecordable returns a manager whose transcripts cannot be created (its state
// directory is a file) and whose recorders' first run waits until the test closes
// release.
func heldUnrecordable(t *testing.T) (*Manager, chan struct{}) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Options{StateDir: file})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	release := make(chan struct{})
	m.holdRecord = func() { <-release }
	return m, release
}

// TestTranscriptFailureToldWhenRecorderIsLate: the first result of a running session
// comes before its recorder has tried to create the transcript (held here, as a loaded
// machine delays it): that result says the transcript is not recorded yet instead of
// saying nothing, and once the recorder has tried and failed, the agent's next look
// (write_stdin) says it is not recorded, once.
func TestTranscriptFailureToldWhenRecorderIsLate(t *testing.T) {
	t.Parallel()
	m, release := heldUnrecordable(t)
	m.recordWait = 100 * time.Millisecond // not a timing assumption: the recorder is held past it
	c := m.NewClient("t")
	y := int64(60000)
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: "echo from-test; exec sleep 600", WaitFor: "from-test", YieldTimeMs: &y})
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != StateRunning || !strings.Contains(r.Output, "from-test") {
		t.Fatalf("exec: state %s, output %q; want running after from-test", r.State, r.Output)
	}
	if !slices.ContainsFunc(r.Notices.Warnings, func(w string) bool { return strings.HasPrefix(w, "transcript not recorded yet: ") }) {
		t.Errorf("the first result, before the recorder tried, warns %q; want that the transcript is not recorded yet", r.Notices.Warnings)
	}
	id := r.SessionID
	s, err := m.lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	<-s.rec.ready // the recorder has tried (and failed)
	notRecorded := func(r *Result) int {
		return len(slices.DeleteFunc(slices.Clone(r.Notices.Warnings), func(w string) bool { return !strings.HasPrefix(w, "transcript not recorded: ") }))
	}
	zero := int64(0)
	poll := func() *Result { // write_stdin typing nothing: the agent's next look
		t.Helper()
		r, err := c.Write(context.Background(), WriteRequest{SessionID: id, YieldTimeMs: &zero})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r = poll(); notRecorded(r) != 1 {
		t.Errorf("the result after the recorder failed warns %q; want once that the transcript is not recorded", r.Notices.Warnings)
	}
	if r = poll(); slices.ContainsFunc(r.Notices.Warnings, func(w string) bool { return strings.HasPrefix(w, "transcript not recorded") }) {
		t.Errorf("a later result warns %q again; want it said once", r.Notices.Warnings)
	}
}

// TestTranscriptFailureToldWithFirstOutput: exec_command returning before the program
// printed (yield 0) does not wait for the recorder (held here); the first result that
// carries output waits for its attempt, and says the transcript is not recorded.
func TestTranscriptFailureToldWithFirstOutput(t *testing.T) {
	t.Parallel()
	m, release := heldUnrecordable(t)
	c := m.NewClient("t")
	zero := int64(0)
	r, err := c.Exec(context.Background(), ExecRequest{Cmd: "read -r x; echo \"got $x\"; exec sleep 600", YieldTimeMs: &zero})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != StateRunning || slices.ContainsFunc(r.Notices.Warnings, func(w string) bool { return strings.HasPrefix(w, "transcript not recorded") }) {
		t.Fatalf("exec with yield 0: state %s, warnings %q; want running, and no word on the transcript yet", r.State, r.Notices.Warnings)
	}
	close(release)
	y := int64(60000)
	r, err = c.Write(context.Background(), WriteRequest{SessionID: r.SessionID, Chars: "hi\n", WaitFor: "got hi", YieldTimeMs: &y})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Output, "got hi") || !slices.ContainsFunc(r.Notices.Warnings, func(w string) bool { return strings.HasPrefix(w, "transcript not recorded: ") }) {
		t.Errorf("the first result with output: %q, warnings %q; want it to say the transcript is not recorded", r.Output, r.Notices.Warnings)
	}
}
