package session

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/proc"
)

// TestNoZombiesLeft: 200 short sessions, each leaving a background child behind, end
// with every process reaped: the reaper (the one owner of waits) has no zombie children.
func TestNoZombiesLeft(t *testing.T) {
	t.Parallel()
	m, c := scNewClient(t)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				r, err := c.Exec(context.Background(), ExecRequest{Cmd: "sleep 0.05 & echo " + strconv.Itoa(w*25+i), YieldTimeMs: new(int64(20000))})
				if err != nil {
					t.Error(err)
					return
				}
				scUntilExit(t, c, r)
			}
		})
	}
	wg.Wait()
	m.mu.Lock()
	rp := m.reaper.Pid()
	m.mu.Unlock()
	// Reaping happens aside from the exit path: wait on the process table.
	deadline := time.Now().Add(20 * time.Second)
	for {
		z := zombieChildren(rp)
		if len(z) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("zombie children of the reaper %d: %v", rp, z)
		}
		time.Sleep(10 * time.Millisecond) // a process state has no event to wait on
	}
}

// zombieChildren lists the zombie processes whose parent is ppid.
func zombieChildren(ppid int) []int {
	var out []int
	for _, p := range proc.List() {
		if p.State == 'Z' && p.PPID == ppid {
			out = append(out, p.PID)
		}
	}
	return out
}
