package truncate

import (
	"bytes"
	"cmp"

	"github.com/ptyhub/ptyhub/termtext"
)

// Token counting of a raw range (original_token_count). The count is a function of the
// range's bytes alone, never of how reads split them, of the budget, or of whether the
// collect went into flood mode: a RawCounter follows the raw stream itself, with its
// own converter.
//
// A range of up to countExact bytes is converted and counted exactly. A longer one is
// cut into blocks at fixed distances from its start (countBlock); of each block a sample
// (from its first line start, about countSample bytes, to a line end) is converted and
// counted exactly, and the block is charged its cheap estimate (Estimator, over
// all its bytes) times the sample's exact tokens per estimated token.
// On text of one kind (logs, JSON, code, CJK, base64, coloured output) that is within
// 1% of the exact count, at the cost of counting an eighth of the first 4 MiB and a few
// KiB per MiB beyond. Of a 16 MiB block (past 64 MiB) only the first estimateSpan bytes
// are estimated, and the estimate is scaled to the block: the cheap estimate runs at
// ~0.7 GB/s, which on a 1 GiB flood cost ~1.4 s of CPU beside a reader that the pty
// holds to ~0.1 GB/s.
const (
	countExact   = 32 << 10
	countSample  = 4 << 10
	estimateSpan = 1 << 20
)

// countBlock is the size of the block that starts p bytes past the range's start:
// 32 KiB up to 4 MiB, 1 MiB up to 64 MiB, then 16 MiB (so a 1 GiB flood counts about
// 250 samples of 4 KiB).
func countBlock(p int64) int64 {
	switch {
	case p < 4<<20:
		return 32 << 10
	case p < 64<<20:
		return 1 << 20
	}
	return 16 << 20
}

// RawCounter counts the text view of a raw stream; see above. Not safe for
// concurrent use.
type RawCounter struct {
	pos  int64  // bytes seen
	head []byte // the first countExact bytes, until the stream proves longer

	blockStart, blockEnd int64   // the current block, in stream positions
	sample               []byte  // the raw sample of the current block, while it grows
	sampled              bool    // the current block's sample is complete and counted
	perMilli             float64 // the sample's exact tokens per estimated milli-token
	blockEst             Estimator
	blockEstBytes        int64 // bytes of the current block given to blockEst
	span                 int64 // estimateSpan, unless set (tests)
	// lastSample is the previous block's counted sample and lastPerMilli its ratio: a
	// block whose sample is the same bytes (a flood of one line, `yes`) reuses it
	// instead of tokenizing them again.
	lastSample   []byte
	lastPerMilli float64
	est          float64 // tokens charged to finished blocks
}

// Write adds raw bytes (the next ones of the range).
func (c *RawCounter) Write(p []byte) {
	if c.head != nil || c.pos == 0 {
		if c.pos+int64(len(p)) <= countExact {
			c.head = append(c.head, p...)
			c.pos += int64(len(p))
			return
		}
		// Longer than countExact: sample it, from the start.
		head := c.head
		c.head, c.pos = nil, 0
		c.blockStart, c.blockEnd = 0, countBlock(0)
		c.stream(head)
	}
	c.stream(p)
}

// stream feeds p to the block sampler.
func (c *RawCounter) stream(p []byte) {
	for len(p) > 0 {
		if c.pos == c.blockEnd { // the next block
			c.finishBlock()
			c.blockStart, c.blockEnd = c.pos, c.pos+countBlock(c.pos)
		}
		k := min(int64(len(p)), c.blockEnd-c.pos)
		if span := c.estimated(); c.blockEstBytes < span {
			e := min(k, span-c.blockEstBytes)
			c.blockEst.Write(p[:e])
			c.blockEstBytes += e
		}
		if !c.sampled {
			c.sample = append(c.sample, p[:k]...)
			c.trySample(false)
		}
		c.pos += k
		p = p[k:]
	}
}

// trySample counts the block's sample once it is complete (or the stream ended): from
// the first line start in the block's first KiB (else its start) to the first line end
// past countSample bytes (at most one more KiB).
func (c *RawCounter) trySample(end bool) {
	s := c.sample
	from := 0
	if i := bytes.IndexByte(s[:min(len(s), 1<<10)], '\n'); i >= 0 {
		from = i + 1
	} else if len(s) < 1<<10 && !end {
		return
	}
	if len(s)-from < countSample && !end {
		return
	}
	to := len(s)
	if len(s)-from >= countSample {
		to = from + countSample
		if i := bytes.IndexByte(s[to:min(len(s), to+1<<10)], '\n'); i >= 0 {
			to += i + 1
		} else if len(s) < to+1<<10 && !end {
			return
		} else {
			to = min(len(s), to+1<<10)
		}
	}
	if c.lastSample != nil && bytes.Equal(s[from:to], c.lastSample) {
		c.perMilli, c.sampled, c.sample = c.lastPerMilli, true, c.sample[:0]
		return
	}
	var est Estimator
	est.Write(s[from:to])
	if to <= from || est.Milli() == 0 {
		c.perMilli, c.sampled, c.sample = 0, true, c.sample[:0]
		return
	}
	var conv termtext.Converter
	text := conv.Close(conv.Write(nil, s[from:to]))
	c.perMilli = float64(Count(string(text))) / float64(est.Milli())
	c.lastSample, c.lastPerMilli = append(c.lastSample[:0], s[from:to]...), c.perMilli
	c.sampled, c.sample = true, c.sample[:0]
}

// estimated is how much of the current block the cheap estimate covers: its first
// estimateSpan bytes (all of a block of 1 MiB or less).
func (c *RawCounter) estimated() int64 {
	return min(c.blockEnd-c.blockStart, cmp.Or(c.span, estimateSpan))
}

// finishBlock charges the block that ends at pos.
func (c *RawCounter) finishBlock() {
	if c.pos <= c.blockStart {
		return
	}
	if !c.sampled {
		c.trySample(true)
	}
	milli := float64(c.blockEst.Milli())
	if c.blockEstBytes > 0 && c.blockEstBytes < c.pos-c.blockStart {
		milli *= float64(c.pos-c.blockStart) / float64(c.blockEstBytes) // the estimated part stands for the block
	}
	c.est += c.perMilli * milli
	c.sampled, c.perMilli, c.blockEst, c.blockEstBytes = false, 0, Estimator{}, 0
}

// Tokens returns the count of everything written. The counter must not be written to
// afterwards.
func (c *RawCounter) Tokens() int {
	if c.blockEnd == 0 { // countExact bytes or fewer: exact
		var conv termtext.Converter
		return Count(string(conv.Close(conv.Write(nil, c.head))))
	}
	c.finishBlock()
	c.blockStart = c.pos
	return int(c.est + 0.5)
}
