package mcpserver

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/session"
)

// progressEvery is how often a long call with a progressToken reports progress.
var progressEvery = time.Second

// progress reports, while a tool call with a progressToken runs, the output its sessions
// printed so far (notifications/progress: progress = bytes, message = the last line), so
// a client shows liveness. The sessions are those the call names (write_stdin,
// wait_sessions), or for exec_command the one it started (a session that was not there
// when the call began and runs its command); wait_sessions without ids follows every
// running session. It sends only when the output grew. It returns a stop function; its
// goroutine ends when stop is called or ctx ends.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest, in any) (stop func()) {
	if req == nil || req.Params == nil || req.Session == nil {
		return func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	var ids []string
	var cmd string
	switch v := in.(type) {
	case session.WriteRequest:
		ids = []string{v.SessionID}
	case session.WaitRequest:
		ids = v.SessionIDs
	case session.ExecRequest:
		cmd = v.Cmd
		if cmd == "" {
			cmd = strings.Join(v.Argv, " ")
		}
	default:
		return func() {}
	}
	before := map[string]bool{}
	if cmd != "" {
		if l, err := s.svc.List(ctx); err == nil {
			for _, i := range l.Sessions {
				before[i.SessionID] = true
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	// The progress goroutine: owned by the tool call, ends when it returns.
	go func() {
		defer close(done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		var sent int64
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			l, err := s.svc.List(ctx)
			if err != nil {
				continue
			}
			var total int64
			var line string
			newest := int64(-1)
			for _, i := range l.Sessions {
				var mine bool
				switch {
				case cmd != "":
					mine = !before[i.SessionID] && i.Command == cmd
				case len(ids) == 0:
					mine = i.State == session.StateRunning
				default:
					mine = slices.Contains(ids, i.SessionID) || i.Name != "" && slices.Contains(ids, i.Name)
				}
				if !mine {
					continue
				}
				total += i.OutputSize
				if i.LastOutputAgoMs != nil && (newest < 0 || *i.LastOutputAgoMs < newest) {
					newest, line = *i.LastOutputAgoMs, i.LastLine
				}
			}
			if total <= sent {
				continue
			}
			sent = total
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: float64(total), Message: line})
		}
	}()
	return func() { cancel(); <-done }
}
