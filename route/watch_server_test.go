package route_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ptyhub/ptyhub/route"
	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
)

// serveManager runs an in-process server of a new manager on a private socket until the
// test ends, and returns the socket.
func serveManager(t *testing.T) (string, *session.Manager) {
	t.Helper()
	mgr, err := session.NewManager(session.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	srv, err := server.Listen(mgr, server.Options{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		mgr.Close(context.Background())
	})
	return sock, mgr
}

// A Watch round that Local's news ends cancels the watch of a member reached over the
// wire (a host, the per-user server): that member is as it was, its sessions still in
// view. Its cancelled call must not read as a failure, which took its sessions out of
// the result (Removed) and so out of an agent's resources, dropping their
// subscriptions; the next round then asked that member for every session, whose
// answer cancelled the other member's watch in turn, without end.
func TestRouterWatchCancelledServerMemberKept(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sock, far := serveManager(t)
	zero := int64(0)
	if _, err := far.NewClient("far").Exec(ctx, session.ExecRequest{Argv: []string{"sleep", "600"}, YieldTimeMs: &zero}); err != nil {
		t.Fatal(err)
	}
	peer := &route.Peer{Name: "host ssh://box",
		Dial: func(ctx context.Context) (route.Conn, error) {
			return server.Dial(ctx, server.DialOptions{Socket: sock, Name: "t"})
		}}
	defer peer.Abandon()
	if _, err := peer.Client(ctx); err != nil {
		t.Fatal(err)
	}
	mgr, err := session.NewManager(session.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close(context.Background())
	local := mgr.NewClient("t")
	r := &route.Router{Local: local, Members: func(context.Context) ([]route.Member, []string) {
		return []route.Member{{Name: peer.Name, Prefix: "ssh://box", Svc: peer}}, nil
	}}
	res, err := r.Watch(ctx, session.WatchRequest{Since: ^uint64(0)})
	if err != nil {
		t.Fatal(err)
	}
	remote := "ssh://box" + route.Sep + "1"
	if !slices.ContainsFunc(res.Sessions, func(s session.WatchSession) bool { return s.SessionID == remote }) {
		t.Fatalf("the first round lists %+v, want the host's session %s", res.Sessions, remote)
	}
	// Local's news (a session started) ends the next round: the host's watch, asked from
	// its generation, is cancelled.
	if _, err := local.Exec(ctx, session.ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	next, err := r.Watch(ctx, session.WatchRequest{Since: res.Generation})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(next.Removed, remote) {
		t.Errorf("a round Local's news ended says the host's session %s was removed (removed %v): its cancelled watch read as a failure", remote, next.Removed)
	}
	if !slices.ContainsFunc(next.Sessions, func(s session.WatchSession) bool { return s.SessionID == "1" }) {
		t.Errorf("the round lists %+v, want Local's new session 1", next.Sessions)
	}
}
