package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// A hello of another protocol is refused with the server's welcome, so the client can
// name both versions.
func TestHelloOtherProtocol(t *testing.T) {
	t.Parallel()
	sock := svServe(t)
	c, err := dialOnce(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = handshake(c, &hello{Protocol: Protocol + 1, Build: "future", Mode: ModeService})
	var verr *VersionError
	if !errors.As(err, &verr) {
		t.Fatalf("hello of protocol %d: %v, want a *VersionError", Protocol+1, err)
	}
	if verr.Server.Protocol != Protocol || verr.Server.PID != os.Getpid() || verr.Server.Build != Build() {
		t.Errorf("the refusal's welcome: %+v", verr.Server)
	}
}

// A server of another build that runs sessions is kept when the protocol matches: the
// client works and says so once.
func TestDialOtherBuildWarns(t *testing.T) {
	t.Parallel()
	sock := svServe(t)
	gofmt := filepath.Join(os.Getenv("GOROOT"), "bin", "gofmt")
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		gofmt = filepath.Join(strings.TrimSpace(string(out)), "bin", "gofmt")
	}
	if goBuildID(gofmt) == "" {
		t.Fatalf("no Go build ID in %s", gofmt)
	}
	var notes []string
	// Executable names the binary this client would start: another build than the server.
	c, err := Dial(t.Context(), DialOptions{Socket: sock, Executable: gofmt, Warn: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background(), false)
	if len(notes) != 1 || !strings.Contains(notes[0], "runs another build") || !strings.Contains(notes[0], "kill-server") {
		t.Errorf("notes %q, want one about another build", notes)
	}
	if r, err := c.Exec(t.Context(), session.ExecRequest{Cmd: "echo ok"}); err != nil || r.Output != "ok\n" {
		t.Errorf("exec through the other build: %v %+v", err, r)
	}
	// The same build: no note.
	notes = nil
	c2, err := Dial(t.Context(), DialOptions{Socket: sock, Warn: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	c2.Close(context.Background(), false)
	if len(notes) != 0 {
		t.Errorf("same build: notes %q", notes)
	}
}

// legacyServer answers as a protocol 1 server does: any hello with fields it does not
// know is refused with "bad hello"; its own hello is welcomed and "list" answered with
// running sessions. It serves until the test ends.
func legacyServer(t *testing.T, running int) string {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // owned by the test; ends when the listener is closed
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // one per connection; ends when the client closes it
				defer c.Close()
				f, err := readFrame(c, MaxFrame)
				if err != nil {
					return
				}
				var h struct {
					Proto int    `json:"proto"`
					Mode  string `json:"mode"`
					Name  string `json:"name"`
				}
				if strictDecode(f.Body, &h) != nil || h.Proto != 1 {
					writeFrame(c, &frame{Op: opReply, Error: &wireError{Kind: "invalid", Message: "bad hello: json: unknown field \"protocol\""}})
					return
				}
				writeFrame(c, reply(0, map[string]any{"proto": 1, "pid": os.Getpid()}))
				for {
					f, err := readFrame(c, MaxFrame)
					if err != nil {
						return
					}
					l := session.ListResult{}
					for i := 0; i < running; i++ {
						l.Sessions = append(l.Sessions, session.Info{State: session.StateRunning})
					}
					l.Sessions = append(l.Sessions, session.Info{State: session.StateExited})
					b, _ := json.Marshal(l)
					writeFrame(c, &frame{ID: f.ID, Op: opReply, Body: b})
				}
			}()
		}
	}()
	return sock
}

// A protocol 1 server with running sessions is refused with both protocol versions named.
func TestDialLegacyServerRefused(t *testing.T) {
	t.Parallel()
	sock := legacyServer(t, 2)
	_, err := Dial(t.Context(), DialOptions{Socket: sock})
	var verr *VersionError
	if !errors.As(err, &verr) {
		t.Fatalf("dial a protocol 1 server: %v, want a *VersionError", err)
	}
	msg := err.Error()
	for _, want := range []string{"speaks protocol 1", "protocol 2", "2 running sessions", "kill-server", "pid "} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}
