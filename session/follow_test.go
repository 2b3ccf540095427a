package session

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"
)

// The decisions of the follow loop (collect, watch), taken on what a round saw, without a
// terminal: each case names the round and the verdict the rules require.

func exitedRound(quiet time.Duration, held bool) round {
	return round{
		exited:    func() bool { return true },
		exitQuiet: func() (time.Duration, bool) { return quiet, held },
		pending:   func() []byte { return nil },
	}
}

func runningRound() round {
	return round{
		exited:    func() bool { return false },
		exitQuiet: func() (time.Duration, bool) { panic("exitQuiet asked of a running session") },
		pending:   func() []byte { return nil },
	}
}

func TestDecideExit(t *testing.T) {
	t.Parallel()
	type want struct {
		because string
		retry   time.Duration
	}
	cases := []struct {
		name  string
		d     decider
		round func() round
		want  want
	}{
		{"drained after the exit", decider{exit: true, drain: true}, func() round { r := exitedRound(0, false); r.eof = true; return r }, want{BecauseExit, 0}},
		{"exited, output not drained, nothing holds the terminal: wait for EOF", decider{exit: true, drain: true}, func() round { return exitedRound(time.Second, false) }, want{"", 0}},
		{"a survivor holds the terminal, quiet long enough", decider{exit: true, drain: true}, func() round { return exitedRound(exitDrainQuiet, true) }, want{BecauseExit, 0}},
		{"a survivor holds the terminal, quiet for 10ms: look again when 50ms have passed", decider{exit: true, drain: true}, func() round { return exitedRound(10*time.Millisecond, true) }, want{"", exitDrainQuiet - 10*time.Millisecond}},
		{"a survivor holds the terminal and output still comes: look again soon", decider{exit: true, drain: true}, func() round { r := exitedRound(time.Second, true); r.fresh = true; return r }, want{"", time.Millisecond}},
		{"a watch: the exit counts at once", decider{exit: true}, func() round { return exitedRound(0, false) }, want{BecauseExit, 0}},
		{"the exit does not count", decider{}, func() round { r := exitedRound(0, false); r.eof = true; return r }, want{"", 0}},
		{"running", decider{exit: true, drain: true}, runningRound, want{"", 0}},
	}
	for _, c := range cases {
		d := c.d
		because, _, retry := d.decide(c.round())
		if because != c.want.because || retry != c.want.retry {
			t.Errorf("%s: got %q retry %v, want %q retry %v", c.name, because, retry, c.want.because, c.want.retry)
		}
	}
}

func TestDecidePattern(t *testing.T) {
	t.Parallel()
	d := &decider{exit: true, drain: true, lm: &lineMatcher{re: regexp.MustCompile(`^ready>`)}}
	if d.feed([]byte("loading\nnot ready> yet\nrea")) {
		t.Fatal("no complete line matches ^ready>, yet feed says one did")
	}
	r := runningRound()
	r.pending = func() []byte { return []byte("dy> ") }
	if because, _, _ := d.decide(r); because != "" {
		t.Errorf("a round neither first nor fresh tried the unfinished line: %q", because)
	}
	r.fresh = true
	if because, _, _ := d.decide(r); because != BecausePattern {
		t.Errorf("fresh output completing the unfinished line as %q: got %q, want pattern", "ready> ", because)
	}
	r.fresh, r.first = false, true
	if because, _, _ := d.decide(r); because != BecausePattern {
		t.Errorf("the first round tries what was there when the follow began: got %q, want pattern", because)
	}

	// A complete line that matched counts in any later round, but the exit comes first.
	d = &decider{exit: true, drain: true, lm: &lineMatcher{re: regexp.MustCompile(`^done$`)}}
	if !d.feed([]byte("x\ndone\n")) {
		t.Fatal("the complete line done did not match ^done$")
	}
	if because, _, _ := d.decide(runningRound()); because != BecausePattern {
		t.Errorf("a matched line: got %q, want pattern", because)
	}
	r = exitedRound(0, false)
	r.eof = true
	if because, _, _ := d.decide(r); because != BecauseExit {
		t.Errorf("an exit and a match in one round: got %q, want exit", because)
	}
}

// lookDecider returns a decider that looks at waiting for input with a clock the test
// moves, and counts the looks.
func lookDecider(t *testing.T, yes bool) (d *decider, looks *int, clock *time.Time) {
	t.Helper()
	now := time.Now()
	d = &decider{exit: true, drain: true, now: func() time.Time { return now }}
	d.looks = newLookSchedule(now)
	t.Cleanup(d.looks.stop)
	n := 0
	d.look = func(time.Duration) (bool, string) { n++; return yes, methodRead }
	d.settled = func() bool { return false }
	return d, &n, &now
}

func TestDecideWaitingForInput(t *testing.T) {
	t.Parallel()

	d, looks, _ := lookDecider(t, true)
	because, method, _ := d.decide(runningRound())
	if because != BecauseWaitingForInput || method != methodRead || *looks != 1 {
		t.Errorf("a due look that says yes: got %q %q after %d looks", because, method, *looks)
	}

	// An empty poll (needNews) waits for output before it looks.
	d, looks, _ = lookDecider(t, true)
	d.needNews = true
	if because, _, _ := d.decide(runningRound()); because != "" || *looks != 0 {
		t.Errorf("needNews without output: got %q after %d looks, want no look", because, *looks)
	}
	r := runningRound()
	r.fresh = true
	if because, _, _ := d.decide(r); because != BecauseWaitingForInput {
		t.Errorf("needNews after output: got %q, want waiting_for_input", because)
	}

	// The shell's prompt decides first, with its own method.
	d, looks, _ = lookDecider(t, true)
	d.atPrompt = func() bool { return true }
	because, method, _ = d.decide(runningRound())
	if because != BecauseWaitingForInput || method != WaitShell || *looks != 0 {
		t.Errorf("at the shell's prompt: got %q %q after %d looks", because, method, *looks)
	}

	// With the output ended, or the session exited, nothing can wait for input.
	d, looks, _ = lookDecider(t, true)
	r = runningRound()
	r.eof = true
	d.atPrompt = func() bool { t.Error("the prompt was asked after the output ended"); return true }
	if because, _, _ := d.decide(r); because != "" || *looks != 0 {
		t.Errorf("after EOF: got %q after %d looks", because, *looks)
	}
	d, looks, _ = lookDecider(t, true)
	d.exit = false // a watch of other events: the exit alone does not end it
	if because, _, _ := d.decide(exitedRound(0, false)); because != "" || *looks != 0 {
		t.Errorf("after the exit: got %q after %d looks", because, *looks)
	}
}

// In flood mode output counts for quiet only: the looks keep backing off instead of
// starting over at each round, and none spins waiting for the output to settle.
func TestDecideFloodLooks(t *testing.T) {
	t.Parallel()
	for _, flood := range []bool{false, true} {
		d, looks, clock := lookDecider(t, false)
		d.settled = func() bool {
			if flood {
				t.Error("flood mode asked whether the output settled")
			}
			return false
		}
		r := runningRound()
		r.fresh, r.flood = true, flood
		d.decide(r) // a look at once: no, the next is due in waitBackoff[0]
		if *looks != 1 {
			t.Fatalf("flood %v: %d looks in the first round, want 1", flood, *looks)
		}
		*clock = clock.Add(waitBackoff[0] / 2)
		d.decide(r)
		want := 2 // output brings a look at once
		if flood {
			want = 1 // the back-off holds
		}
		if *looks != want {
			t.Errorf("flood %v: output before the next look was due: %d looks, want %d", flood, *looks, want)
		}
	}
}

func TestDecideDeadline(t *testing.T) {
	t.Parallel()
	now := time.Now()
	d := &decider{exit: true, drain: true, deadline: now, now: func() time.Time { return now.Add(-time.Millisecond) }}
	if because, _, _ := d.decide(runningRound()); because != "" {
		t.Errorf("before the deadline: got %q", because)
	}
	d.now = func() time.Time { return now }
	if because, _, _ := d.decide(runningRound()); because != BecauseDeadline {
		t.Errorf("at the deadline: got %q, want deadline", because)
	}
	d.deadline = time.Time{}
	if because, _, _ := d.decide(runningRound()); because != "" {
		t.Errorf("without a deadline (a watch): got %q", because)
	}
	// A program waiting at the deadline is reported waiting, not timed out.
	d, _, clock := lookDecider(t, true)
	d.deadline = *clock
	if because, _, _ := d.decide(runningRound()); because != BecauseWaitingForInput {
		t.Errorf("waiting at the deadline: got %q, want waiting_for_input", because)
	}
}

// TestFollowExitAfterDecide: the exit recorded after a round's decisions looked at it
// and before the loop chose what to wait for, with the output already ended. The loop
// waits on the exit's channel then, not on nothing: before, seeing the exit recorded at
// that moment it dropped the channel as already seen, and with the output's channel
// dropped at its end too, an exec of /bin/true waited for its 10 s deadline (once in
// ~2,000 execs under load). The exit is recorded by the decider's clock, which decide
// reads after the exit (for the deadline); ctx's timeout only ends a failing test.
func TestFollowExitAfterDecide(t *testing.T) {
	s := &Session{exited: make(chan struct{})}
	var once sync.Once
	d := &decider{exit: true, drain: true, deadline: time.Now().Add(time.Hour), now: func() time.Time {
		once.Do(func() { close(s.exited) })
		return time.Now()
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	read := func() round { return round{eof: true} }
	notify := func() <-chan struct{} { return closedNotify }
	because, _ := s.follow(ctx, d, read, notify)
	if because != BecauseExit {
		t.Fatalf("follow returned %q, want %q", because, BecauseExit)
	}
}

// closedNotify is a notify channel of an ended output: always ready.
var closedNotify = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
