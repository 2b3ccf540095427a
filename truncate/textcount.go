package truncate

// TextCounter counts the o200k tokens of a text stream that arrives in pieces of any
// size. It counts at line starts, where o200k never joins text (see segments), so the
// count is Count of the whole text, however the stream was split (but for lines longer
// than 64 KiB, counted in 64 KiB pieces: a token or so more each). It holds one pending
// piece (a little over 16 KiB). The zero value is ready to use; not safe for concurrent
// use.
type TextCounter struct {
	seg []byte
	n   int
}

const (
	textCountSeg  = 16 << 10 // count when this much is pending
	textCountLong = 64 << 10 // and cut a line this long anywhere
)

// Write adds text.
func (c *TextCounter) Write(p []byte) {
	c.seg = append(c.seg, p...)
	if len(c.seg) < textCountSeg {
		return
	}
	// The last line start in the pending text.
	for i := len(c.seg) - 1; i > 0; i-- {
		if c.seg[i-1] == '\n' && c.seg[i] != '\n' && c.seg[i] != '\r' && c.seg[i] != '/' {
			c.n += Count(string(c.seg[:i]))
			c.seg = c.seg[:copy(c.seg, c.seg[i:])]
			return
		}
	}
	if len(c.seg) >= textCountLong {
		c.n += Count(string(c.seg))
		c.seg = c.seg[:0]
	}
}

// Tokens returns the tokens of all text written so far.
func (c *TextCounter) Tokens() int {
	return c.n + Count(string(c.seg))
}
