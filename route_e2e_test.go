package ptyhub_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/session"
)

// TestRemoteSSHEverywhere: a session an agent runs on a host (over a real sshd) is seen
// everywhere a session of this machine is. The agent's resources/list lists it beside
// the CLI's session and its own, and each resource says whose it is; a subscriber hears
// when the host's session ends; `ptyhub ls`, `ptyhub wait HOST:ID` and the browser
// view's list (all through the per-user server, which reaches the host through the
// agent) see it; wait_sessions {} returns when it ends.
func TestRemoteSSHEverywhere(t *testing.T) {
	t.Parallel()
	s := rmStartSSHD(t)
	h := s.hub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, errs, code := h.run("exec", "--json", "--name", "clisess", "--yield", "0", "--", "sleep", "600")
	var cli session.Result
	if err := json.Unmarshal([]byte(out), &cli); err != nil || code != 124 {
		t.Fatalf("ptyhub exec: status %d, %v\n%s%s", code, err, out, errs)
	}

	updated := make(chan string, 16)
	cmd := osexec.Command(h.bin, "mcp")
	cmd.Env, cmd.Dir = append(h.env, "PWD="+h.dir), h.dir
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "route-test", Version: "0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			updated <- r.Params.URI
		},
	}).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := toolCaller(t, ctx, cs)
	own := call("exec_command", map[string]any{"cmd": "sleep 600", "yield_time_ms": 0})
	gate := filepath.Join(s.dir, "gate")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	remote := call("exec_command", map[string]any{"host": s.url, "cmd": "while [ -e " + gate + " ]; do sleep 0.05; done; echo remote-done", "yield_time_ms": 0})
	rid := remote["session_id"].(string)
	if !strings.HasPrefix(rid, s.url+":") {
		t.Fatalf("remote session id %q does not read HOST:ID", rid)
	}

	// resources/list: the three sessions, each saying whose it is.
	want := map[string]string{
		"ptyhub://session/" + own["session_id"].(string): "run by this agent",
		"ptyhub://session/" + cli.SessionID:              "run by the ptyhub server",
		"ptyhub://session/" + rid:                        "run by host " + s.url,
	}
	var listed []*mcp.Resource
	svWait(t, "resources/list to list the CLI's, the agent's and the host's sessions", func() bool {
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		listed = res.Resources
		n := 0
		for _, r := range listed {
			if _, ok := want[r.URI]; ok {
				n++
			}
		}
		return n == len(want)
	})
	for _, r := range listed {
		if w, ok := want[r.URI]; ok && !strings.Contains(r.Description, w) {
			t.Errorf("resource %s: description %q does not say %q", r.URI, r.Description, w)
		}
	}

	// Through the per-user server: ls and the browser view's list have the host's
	// session (the server reaches it through the agent, which connects to the host for
	// it on the first listing that asks), and `ptyhub wait` waits on it.
	svWait(t, "ptyhub ls to list the agent's host session", func() bool {
		ids, _ := h.lsIDs()
		return slices.Contains(ids, rid)
	})
	page := strings.TrimSpace(h.ok("web"))
	webListIDs(t, ctx, page, func(ids []string) bool { return slices.Contains(ids, rid) && slices.Contains(ids, cli.SessionID) })
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "ptyhub://session/" + rid}); err != nil {
		t.Fatal(err)
	}
	mcpWait := make(chan map[string]any, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_sessions", Arguments: map[string]any{"until": []string{"exit"}, "timeout_ms": 120000}})
		if err != nil || res.IsError {
			t.Errorf("wait_sessions: %v %+v", err, res)
			mcpWait <- nil
			return
		}
		mcpWait <- res.StructuredContent.(map[string]any)
	}()
	// Whether the wait began before the session ended or after, its exit is the agent's
	// news.
	os.Remove(gate)
	if sc := <-mcpWait; sc != nil && (sc["session_id"] != rid || !strings.Contains(sc["output"].(string), "remote-done")) {
		t.Errorf("wait_sessions {} returned %v, want the host's session %s", sc, rid)
	}
	if out, errs, code := h.run("wait", rid, "--until", "exit", "--timeout", "2m"); code != 0 || !strings.Contains(out, "Session "+rid+": exited") {
		t.Errorf("ptyhub wait %s: status %d\n%s%s", rid, code, out, errs)
	}
	for heard := false; !heard; {
		select {
		case uri := <-updated:
			heard = uri == "ptyhub://session/"+rid
		case <-ctx.Done():
			t.Fatalf("no notifications/resources/updated for the host's session %s", rid)
		}
	}
}

// webListIDs opens the browser view's list at page (the URL `ptyhub web` printed) as the
// page does and reads it until its ids satisfy want (the test fails when it ends first).
func webListIDs(t *testing.T, ctx context.Context, page string, want func([]string) bool) {
	t.Helper()
	u, err := url.Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	ws := "ws://" + u.Host + "/ws/list?token=" + u.Query().Get("token")
	c, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: map[string][]string{"Origin": {"http://" + u.Host}}})
	if err != nil {
		t.Fatalf("the browser view's list: %v", err)
	}
	defer c.CloseNow()
	var ids []string
	for !want(ids) {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("the browser view's list ended (%v); it showed %v", err, ids)
		}
		var l struct {
			Sessions []struct {
				SessionID string `json:"session_id"`
			} `json:"sessions"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("the browser view's list: %v: %s", err, b)
		}
		ids = ids[:0]
		for _, s := range l.Sessions {
			ids = append(ids, s.SessionID)
		}
	}
}
