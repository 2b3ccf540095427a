package ptyhub_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// End-to-end: the yield window ends when the program waits for input,
// through session.Client, without wait_for.

func wE2EClient(t *testing.T) *session.Client {
	t.Helper()
	m, err := session.NewManager(session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m.NewClient("waiting-e2e")
}

func TestWaitingForInputE2E(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "python3")
	c := wE2EClient(t)
	ctx := context.Background()

	// exec python3 -q comes back at the prompt, not at the 10 s deadline.
	r := exec(t, c, session.ExecRequest{Argv: []string{"python3", "-q"}})
	defer c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	if r.ReturnedBecause != session.BecauseWaitingForInput || !strings.HasSuffix(r.Output, ">>> ") {
		t.Fatalf("exec: returned because %q after %.1f ms with %q, want waiting_for_input at \">>> \"", r.ReturnedBecause, r.WallTimeMs, r.Output)
	}
	if !strings.Contains(r.Text(), "\nWaiting for input\n") {
		t.Errorf("text lacks the waiting line:\n%s", r.Text())
	}
	// A REPL turn: the answer and the next prompt, no wait_for.
	for i := range 5 {
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "1+1\n", YieldTimeMs: new(int64(10_000))})
		if r.ReturnedBecause != session.BecauseWaitingForInput || !strings.Contains(r.Output, "\n2\n>>> ") {
			t.Fatalf("turn %d: returned because %q after %.1f ms with %q, want waiting_for_input with 2 and the prompt", i, r.ReturnedBecause, r.WallTimeMs, r.Output)
		}
	}

	// A program that sleeps then prints is not waiting: the call ends at its exit (the
	// quiet heuristic too: a silent sleep does not have the shape of a prompt).
	r = exec(t, c, session.ExecRequest{Cmd: "sleep 1; echo done"})
	if r.ReturnedBecause != session.BecauseExit || !strings.Contains(r.Output, "done") {
		t.Fatalf("sleep: returned because %q after %.1f ms with %q, want exit with done", r.ReturnedBecause, r.WallTimeMs, r.Output)
	}
}

// Twenty silent sleeps at once, each followed by its output: every call returns the
// output and the exit, on the kernel's view and under the quiet heuristic alike.
func TestWaitingSleepsInParallelE2E(t *testing.T) {
	t.Parallel()
	c := wE2EClient(t)
	ctx := context.Background()
	errs := make(chan string, 20)
	for i := range 20 {
		go func() {
			want := fmt.Sprintf("X%d", i)
			r, err := c.Exec(ctx, session.ExecRequest{Cmd: "sleep 1; echo " + want, YieldTimeMs: new(int64(60_000))})
			switch {
			case err != nil:
				errs <- err.Error()
			case r.ReturnedBecause != session.BecauseExit || !strings.Contains(r.Output, want):
				errs <- fmt.Sprintf("%s: returned because %q (detection %q) with %q, want exit with %s", want, r.ReturnedBecause, r.WaitDetection, r.Output, want)
				c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
			default:
				errs <- ""
			}
		}()
	}
	for range 20 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}
