package session

// Extension points of a session's life. Each feature keeps its state in its own type and
// file (screen.go, record.go, attach.go); this file only fans the events out, in a fixed
// order, and is the one place to read to see what runs when.

// startFeatures runs once the program is started, before the reader starts, so every
// feature sees the output from offset 0.
func (s *Session) startFeatures(rows, cols int) {
	s.rec = startRecorder(s, rows, cols)
	s.scr = startScreen(s, rows, cols)
}

// noteOutput runs in the reader goroutine after each chunk of output, p, went into the
// hub (p is still the reader's): it starts the transcript's recorder and the screen's
// query answerer if none runs (recorder.kick, screen.Model.KickWrote).
func (s *Session) noteOutput(p []byte) {
	s.rec.kick()
	s.scr.kick(p)
}

// noteOutputEnd runs in the reader goroutine once the hub is closed: the recorder runs to
// see the end.
func (s *Session) noteOutputEnd() {
	s.rec.kick()
}

// noteInput runs in the writer goroutine just before data is written to the program.
// hidden says the terminal had echo off (a password prompt): the data must not be stored.
// settled says the writer is the call that queued the data, which calls noteCollected
// once it has collected the program's answer.
func (s *Session) noteInput(data []byte, hidden, settled bool) {
	s.rec.input(data, hidden, settled)
}

// noteCollected runs in a call that wrote input, once it has collected the program's
// answer (see noteInput).
func (s *Session) noteCollected() {
	s.rec.settleInput()
}

// noteResize runs after the window size changed.
func (s *Session) noteResize(rows, cols int) {
	s.rec.resize(rows, cols)
	s.scr.resize(rows, cols)
}

// noteExit runs once the exit status is recorded, before anyone sees the session exited.
func (s *Session) noteExit() {
	s.rec.exit()
}

// stopFeatures runs after the output ended and the session is torn down.
func (s *Session) stopFeatures() {
	s.scr.stop()
	s.rec.stop()
}

// inputHidden reports whether the terminal has echo off: input typed then is kept only as
// its length. In line mode that is a password prompt; in raw mode a program that echoes
// for itself (readline, an editor) shows what it wants in its output, and one that does
// not (a raw-mode password prompt: prompt_toolkit's is_password, `stty raw -echo`) is
// reading a secret, which the termios flags cannot tell apart.
// at holds the terminal's flags read for the input's start (see startJob).
func (s *Session) inputHidden(at *termAttrs) bool {
	if !s.tty {
		return false
	}
	a, err := at.get(s)
	return err == nil && !a.Echo
}

// humanAttached reports whether a human's terminal is attached (and answers terminal
// queries itself).
func (s *Session) humanAttached() bool { return s.att.attached() }

// takeHumanInput returns the bytes humans typed since the last call, and resets the count.
func (s *Session) takeHumanInput() int64 { return s.att.takeInputBytes() }

// readArchived reads output at offset off that has left the in-memory ring, from the
// transcript. It returns 0 bytes when the transcript does not have them.
func (s *Session) readArchived(p []byte, off int64) int { return s.rec.readAt(p, off) }
