package truncate

import "sort"

// bytesPerToken bounds the bytes a shown token can take: the head and the tail
// buffers hold half the budget each at this many bytes per token (at least
// minSide bytes). Terminal output runs 2–5 bytes per token; text that runs
// longer (long runs of spaces or rules) shows fewer tokens than the budget.
const (
	bytesPerToken = 16
	minSide       = 4 << 10
)

// minTags is the least number of tags that the head and the tail each keep; they keep
// up to half their size in bytes (one per line of two bytes or more: a Collector fed
// line by line, as the session's collect does, names the raw bytes of the cut exactly, to
// the line). Past that, neighbouring tags merge, and raw ranges coarsen (never shrink).
const minTags = 512

// A Collector accumulates a stream of text for a token budget, in memory
// bounded by the budget, not by the stream: it keeps the head of the text
// and a ring of its tail (max(4 KiB, budget/2 × 16 bytes) each: 80 KB at the
// default budget, 2 MB at the maximum) and only estimates the tokens of
// what passes between them; Write runs at about 700 MB/s. The raw range a
// Result reports is widened to whole chunks: write a line per call (a text
// line with the raw bytes it came from) and it names the cut lines exactly.
// A Collector is not safe for concurrent use.
type Collector struct {
	budget   int
	identity bool // raw offsets are text offsets (Middle)
	counted  bool // the caller counts the original tokens (CountedElsewhere)
	n        int64

	// head holds text [0, len(head)), up to headMax bytes.
	head     []byte
	headMax  int
	headTags tags

	// ring holds text [n-held, n): held bytes from ring[first], wrapping.
	ring     []byte
	tailMax  int
	first    int
	held     int
	tailTags tags

	// mid estimates the text evicted from the ring: [len(head), n-held).
	// midFirst is the raw start of its first chunk, midLast the raw end
	// of its last.
	mid               estimator
	midSeen           bool
	midFirst, midLast int64
}

// NewCollector returns a Collector for budget tokens (clamped, see Clamp).
func NewCollector(budget int) *Collector {
	side := SideBytes(budget)
	c := &Collector{budget: Clamp(int64(budget)), headMax: side, tailMax: side}
	c.headTags.max = max(minTags, side/2)
	c.tailTags.max = c.headTags.max
	return c
}

// Write adds text, produced by the raw bytes [rawStart, rawEnd). Raw ranges
// must not go backwards. Empty text is ignored. Write keeps no reference to
// text.
func (c *Collector) Write(text []byte, rawStart, rawEnd int64) {
	write(c, text, rawStart, rawEnd, false)
}

// WriteExact is Write of text that is its raw bytes [rawStart, rawEnd) as they are,
// except that a final "\n" may be "\r\n" in raw (a plain line): a cut inside it is
// then mapped to the raw byte exactly, not widened to the whole line.
func (c *Collector) WriteExact(text []byte, rawStart, rawEnd int64) {
	write(c, text, rawStart, rawEnd, true)
}

func write[T string | []byte](c *Collector, p T, rawStart, rawEnd int64, exact bool) {
	if len(p) == 0 {
		return
	}
	start := c.n
	c.n += int64(len(p))
	if h := min(len(p), c.headMax-len(c.head)); h > 0 {
		c.head = append(c.head, p[:h]...)
		if exact && h < len(p) {
			c.headTags.push(tag{start, start + int64(h), rawStart, rawStart + int64(h), true})
			rawStart += int64(h)
		} else {
			c.headTags.push(tag{start, start + int64(h), rawStart, rawEnd, exact})
		}
		p, start = p[h:], start+int64(h)
		if len(p) == 0 {
			return
		}
	}
	c.tailTags.push(tag{start, c.n, rawStart, rawEnd, exact})
	if c.ring == nil {
		c.ring = make([]byte, c.tailMax)
	}
	if over := len(p) - len(c.ring); over > 0 { // p alone overflows the ring
		c.evict(c.held)
		if !c.counted {
			addEstimate(&c.mid, p[:over])
		}
		p = p[over:]
	} else if over := c.held + len(p) - len(c.ring); over > 0 {
		c.evict(over)
	}
	end := (c.first + c.held) % len(c.ring)
	k := copy(c.ring[end:], p)
	copy(c.ring, p[k:])
	c.held += len(p)

	// Note the raw range of chunks that lost text to the middle; forget
	// those that lost all of it.
	ringStart := c.n - int64(c.held)
	for c.tailTags.len() > 0 {
		t := c.tailTags.front()
		if t.start >= ringStart {
			break
		}
		if !c.midSeen {
			c.midFirst, c.midSeen = t.rawStart, true
		}
		c.midLast = t.rawEnd
		if t.end > ringStart {
			break
		}
		c.tailTags.pop()
	}
}

// CountedElsewhere tells the collector that its caller counts the original tokens itself
// and sets them with Result.SetOriginal whenever the result is truncated: the text that
// goes to the middle is then not estimated (in a flood, a sampled pass over the bytes
// that SkipRaw accounts for). The result after SetOriginal is the same either way.
func (c *Collector) CountedElsewhere() { c.counted = true }

// evict moves the oldest k bytes of the ring to the middle.
func (c *Collector) evict(k int) {
	a := c.ring[c.first:min(c.first+k, len(c.ring))]
	if !c.counted {
		addEstimate(&c.mid, a)
		addEstimate(&c.mid, c.ring[:k-len(a)])
	}
	c.first = (c.first + k) % len(c.ring)
	c.held -= k
}

// Len returns the number of text bytes written.
func (c *Collector) Len() int64 { return c.n }

// Result returns what an agent sees of the text written so far. It does not
// change the Collector: it may be called at any time, more than once, and
// writing may go on. It costs tokenizing about the budget's worth of text.
func (c *Collector) Result() Result {
	head := string(c.head)
	tail := string(c.ring[c.first:min(c.first+c.held, len(c.ring))]) +
		string(c.ring[:max(0, c.first+c.held-len(c.ring))])
	ringStart := c.n - int64(len(tail))
	evicted := ringStart > int64(len(head))

	// Cut the head from left and the tail from right: the two buffers, or
	// the whole text twice when nothing was evicted.
	left, right, rightAt := head, tail, ringStart
	whole, wholeExact := 0, false
	if !evicted {
		left = head + tail
		right, rightAt = left, 0
		// Text up to markerTokens long is shown whole: the marker would be
		// longer.
		limit := max(c.budget, markerTokens)
		if len(left) <= limit/maxTokensPerByte {
			// It fits without a count (the usual short result), so a process whose
			// results are short never builds the tokenizer (tens of milliseconds on
			// its first use, seconds on a loaded machine).
			return Result{Text: left}
		}
		n, exact := Tokens(left, limit)
		if n <= limit {
			return Result{Text: left, OriginalTokens: n}
		}
		whole, wholeExact = n, exact
	}
	avail := max(c.budget-markerTokens, 0)
	he := headCut(left, avail/2, evicted)
	ts := tailCut(right, avail-avail/2)
	if !evicted && he >= ts { // the halves meet: it fits after all
		return Result{Text: left, OriginalTokens: Count(left)}
	}

	kept := Count(left[:he]) + Count(right[ts:])
	var cut int
	switch {
	case evicted:
		cut = Estimate(left[he:]) + c.mid.tokens() + Estimate(right[:ts])
	case wholeExact:
		cut = whole - kept
	default:
		cut = Estimate(left[he:ts])
	}
	cut = max(cut, 1)
	text, at, end := join(left[:he], cut, right[ts:])
	r := Result{
		Text:           text,
		Truncated:      true,
		OriginalTokens: kept + cut,
		kept:           kept,
		markAt:         at,
		markEnd:        end,
	}
	r.CutFrom, r.CutTo = c.rawRange(int64(he), rightAt+int64(ts))
	return r
}

// rawRange returns the raw range of the chunks holding text [from, to).
func (c *Collector) rawRange(from, to int64) (int64, int64) {
	if c.identity {
		return from, to
	}
	ringStart := c.n - int64(c.held)
	switch {
	case from < int64(len(c.head)):
		from = c.headTags.find(from).rawAt(from)
	case from < ringStart: // the first evicted byte
		from = c.midFirst
	default:
		from = c.tailTags.find(from).rawAt(from)
	}
	switch last := to - 1; {
	case last >= ringStart && last >= int64(len(c.head)):
		to = c.tailTags.find(last).rawAfter(last)
	case last >= int64(len(c.head)): // the last evicted byte
		to = c.midLast
	default:
		to = c.headTags.find(last).rawAfter(last)
	}
	return from, to
}

// rawAt returns the raw offset where the text from x on begins: exact in an exact tag,
// else the tag's start.
func (t tag) rawAt(x int64) int64 {
	if t.exact {
		return t.rawStart + x - t.start
	}
	return t.rawStart
}

// rawAfter returns the raw offset just past the text byte at x: exact in an exact tag
// (but for its last byte, a "\n" that may be "\r\n"), else the tag's end.
func (t tag) rawAfter(x int64) int64 {
	if t.exact && x < t.end-1 {
		return t.rawStart + x - t.start + 1
	}
	return t.rawEnd
}

// tag says that raw bytes [rawStart, rawEnd) produced text [start, end); exact says
// byte for byte (see WriteExact).
type tag struct {
	start, end, rawStart, rawEnd int64
	exact                        bool
}

// tags is a list of contiguous tags in text order, at most max long,
// that may drop tags from its front.
type tags struct {
	t   []tag
	lo  int // t[lo:] are live
	max int // at most this many
}

func (l *tags) len() int   { return len(l.t) - l.lo }
func (l *tags) front() tag { return l.t[l.lo] }
func (l *tags) pop()       { l.lo++ }

func (l *tags) push(t tag) {
	if len(l.t) == cap(l.t) && l.lo > 0 && 2*l.lo >= len(l.t) { // reuse, do not grow
		l.t, l.lo = l.t[:copy(l.t, l.t[l.lo:])], 0
	}
	if l.len() >= max(l.max, minTags) {
		l.t, l.lo = l.t[:copy(l.t, l.t[l.lo:])], 0
		if n := len(l.t); n > max(l.max, minTags)/2 { // merge neighbours pairwise
			for i := 0; i < n/2; i++ {
				a, b := l.t[2*i], l.t[2*i+1]
				l.t[i] = tag{a.start, b.end, a.rawStart, b.rawEnd, false}
			}
			if n%2 == 1 {
				l.t[n/2] = l.t[n-1]
			}
			l.t = l.t[:(n+1)/2]
		}
	}
	l.t = append(l.t, t)
}

// find returns the tag that holds text offset x.
func (l *tags) find(x int64) tag {
	live := l.t[l.lo:]
	return live[sort.Search(len(live), func(i int) bool { return live[i].end > x })]
}

// Overflowing reports whether text has already passed between the head and the tail: the
// result will be truncated, and a caller may stop converting every byte and hand what
// follows over raw (SkipRaw) until the part that can still reach the tail.
func (c *Collector) Overflowing() bool {
	return len(c.head) == c.headMax && c.n-int64(c.held) > int64(len(c.head))
}

// SkipRaw accounts for raw bytes [rawStart, rawEnd) whose text goes to the middle without
// being produced: the text held in the tail ring, which came before them, moves to the
// middle too, and their tokens are estimated from the raw bytes (sampled when long, so
// that a flood costs a fraction of a pass). Text written afterwards is the new tail.
func (c *Collector) SkipRaw(raw []byte, rawStart, rawEnd int64) {
	if len(raw) == 0 {
		return
	}
	if c.held > 0 {
		c.evict(c.held)
	}
	for c.tailTags.len() > 0 { // everything the ring held is now middle
		t := c.tailTags.front()
		if !c.midSeen {
			c.midFirst, c.midSeen = t.rawStart, true
		}
		c.midLast = max(c.midLast, t.rawEnd)
		c.tailTags.pop()
	}
	if !c.midSeen {
		c.midFirst, c.midSeen = rawStart, true
	}
	c.midLast = max(c.midLast, rawEnd)
	if !c.counted {
		addEstimateSampled(&c.mid, raw)
	}
	c.n += int64(len(raw))
}

// addEstimateSampled estimates p whole when short, else one 4 KiB block in every 8,
// scaled.
func addEstimateSampled(e *estimator, p []byte) {
	const block, every = 4 << 10, 8
	if len(p) < 2*block*every {
		addEstimate(e, p)
		return
	}
	var s estimator
	sampled := 0
	for i := 0; i < len(p); i += block * every {
		b := p[i:min(i+block, len(p))]
		addEstimate(&s, b)
		sampled += len(b)
	}
	e.milli += s.milli * uint64(len(p)) / uint64(sampled)
}

// SideBytes is the size of the head and of the tail buffer of a Collector for budget: the
// most text either side can show.
func SideBytes(budget int) int { return max(minSide, (Clamp(int64(budget))+1)/2*bytesPerToken) }
