package session_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// A session is in the manager's table from the moment its start admits it, before its
// program and terminal exist; calls of other goroutines that find it then (list_sessions,
// a write, read, resize or kill by id, wait_sessions) wait for its start to finish
// instead of reading a terminal that is not there yet (which crashed the process).
func TestCallsDuringAStart(t *testing.T) {
	t.Parallel()
	c := wClient(t)
	const starts = 12
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for range starts {
			if _, err := c.Exec(context.Background(), session.ExecRequest{Cmd: "sleep 60", YieldTimeMs: new(int64(0))}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	ctx := context.Background()
	next := 1
	for {
		select {
		case <-done:
			wg.Wait()
			l, err := c.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range l.Sessions {
				c.Kill(ctx, session.KillRequest{SessionID: i.SessionID, Remove: true})
			}
			return
		default:
		}
		if _, err := c.List(ctx); err != nil {
			t.Fatal(err)
		}
		// The session being started now: the next id.
		id := strconv.Itoa(next)
		if _, err := c.Write(ctx, session.WriteRequest{SessionID: id, YieldTimeMs: new(int64(0))}); err == nil {
			c.Resize(ctx, session.ResizeRequest{SessionID: id, Rows: 30, Cols: 90})
			c.Read(ctx, session.ReadRequest{SessionID: id})
			next++
		}
	}
}
