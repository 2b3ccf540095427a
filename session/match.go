package session

import (
	"bytes"
	"regexp"
)

// lineMatcher matches a wait_for pattern against the text of one collect, line by line
// (as grep does: ^ and $ match at the line's start and end, and no match spans lines),
// and never against the terminal's echo of the call's own input.
//
// The echo is recognised by content: the lines of input the call typed, in order; the
// first line of text that holds the next expected one is the echo and is not matched
// (the prompt before it was already seen); later lines are the program's, even when they
// repeat the input (cat prints what it read, "read name; echo hi $name"). An unfinished
// line that ends with the start of the expected echo is not matched, so a pattern cannot
// match half an echo. Input typed before a shell's prompt appeared is echoed twice (by
// the terminal, then by readline behind the prompt); that second copy can match.
type lineMatcher struct {
	re   *regexp.Regexp
	echo [][]byte // input lines not yet seen echoed, in order
	line []byte   // the unfinished line of the text fed so far (its last patternWindow bytes)
}

// echoLines returns the lines of input data whose echo a terminal shows: the text of
// each line (ended by CR or LF, or unfinished) that holds no control character. A line
// with one (a ^C, an arrow key) is not looked for: its echo is not the text typed.
func echoLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\r\n")
		l := data
		if i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(l) == 0 || bytes.ContainsFunc(l, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			continue
		}
		out = append(out, bytes.Clone(l))
	}
	return out
}

// feed matches every line that text completes and keeps the unfinished one.
func (m *lineMatcher) feed(text []byte) bool {
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			m.line = append(m.line, text...)
			if over := len(m.line) - patternWindow; over > 0 {
				m.line = m.line[:copy(m.line, m.line[over:])]
			}
			return false
		}
		l := text[:i]
		if len(m.line) > 0 {
			l = append(m.line, l...)
		}
		text = text[i+1:]
		matched := m.match(l, true)
		m.line = m.line[:0]
		if matched {
			return true
		}
	}
	return false
}

// matchPending matches the unfinished line completed with pending (the converter's
// unfinished line: a prompt without a newline).
func (m *lineMatcher) matchPending(pending []byte) bool {
	l := append(m.line[:len(m.line):len(m.line)], pending...)
	return m.match(l, false)
}

func (m *lineMatcher) match(l []byte, complete bool) bool {
	if len(m.echo) > 0 {
		e := m.echo[0]
		if bytes.Contains(l, e) {
			if complete {
				m.echo = m.echo[1:]
			}
			return false
		}
		if !complete {
			for k := min(len(e)-1, len(l)); k > 0; k-- {
				if bytes.HasSuffix(l, e[:k]) {
					return false
				}
			}
		}
	}
	return m.re.Match(l)
}
