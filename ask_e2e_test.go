package ptyhub_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
)

// TestAskHuman runs ask_human through the official TypeScript MCP SDK, with a client that
// declares URL-mode elicitation and one that does not. A program waits at a password
// prompt; the agent asks for a person; the session shows as needing one in `ptyhub ls`
// with the agent's message, and an attached terminal rings. The elicitation carries the
// session's page in ptyhub web (with its token); without it, the result tells the agent
// what to relay. The test, as the person, attaches (their terminal rings: an agent
// waits) and types the password; the call
// returns "answered" with the program's output after it, and the password is nowhere in
// what the agent got.
func TestAskHuman(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"url", "plain"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			askHumanE2E(t, mode)
		})
	}
}

func askHumanE2E(t *testing.T, mode string) {
	testtool.Need(t, "python3")
	node := testtool.Path(t, "node")
	dir := e2eNodeDir(t, "mcpclient", "@modelcontextprotocol/sdk", "ask.mjs")
	sv := svNew(t)
	var b [8]byte
	rand.Read(b[:])
	password := "pw-" + hex.EncodeToString(b[:])

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, filepath.Join(dir, "ask.mjs"), sv.bin, mode)
	cmd.Dir, cmd.Env = sv.dir, append(sv.env, "PWD="+sv.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	pipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer // everything the agent's client saw
	lines := make(chan map[string]any)
	// The reader of the client's lines: owned by this test, ends with the client's stdout.
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			all.Write(sc.Bytes())
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	defer func() {
		cancel()
		cmd.Wait()
	}()
	var elicited map[string]any
	next := func(step string) map[string]any {
		t.Helper()
		for m := range lines {
			if m["step"] == step {
				return m
			}
			if m["step"] == "elicit" {
				elicited = m
			}
		}
		t.Fatalf("the client ended before step %s: %s", step, stderr.String())
		return nil
	}
	exec := next("exec")
	st, _ := exec["structured"].(map[string]any)
	id, _ := st["session_id"].(string)
	if st["password_prompt"] != true {
		t.Fatalf("exec did not stop at the password prompt: %v", exec)
	}

	// A terminal attached read-only before the ask: it must ring. (`ls` starts the
	// per-user server, which relays to the agent's ptyhub mcp.)
	sv.ok("ls")
	watch, err := server.DialAttach(ctx, server.DialOptions{Socket: sv.socket, Name: "watcher"}, server.AttachOptions{Session: id, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	rang := make(chan struct{})
	// The watcher's reader: owned by this test, ends when watch is closed.
	go func() {
		for {
			data, ended, _, err := watch.Recv()
			if err != nil || ended {
				return
			}
			if bytes.Contains(data, []byte("\a")) {
				close(rang)
				return
			}
		}
	}()
	stdin.Write([]byte("go\n"))
	next("asking")
	var info session.Info
	svWait(t, "ls to mark the session as needing a person", func() bool {
		var l session.ListResult
		json.Unmarshal([]byte(sv.ok("ls", "--json")), &l)
		for _, in := range l.Sessions {
			if in.SessionID == id {
				info = in
			}
		}
		return info.NeedsHuman
	})
	if info.HumanMessage != "type the sudo password" || !info.PasswordPrompt {
		t.Errorf("ls shows %+v, want the agent's message and the password prompt", info)
	}
	if out := sv.ok("ls"); !strings.Contains(out, "running(person)") {
		t.Errorf("ls does not mark the session:\n%s", out)
	}
	select {
	case <-rang:
	case <-ctx.Done():
		t.Fatal("the attached terminal did not ring")
	}

	// The person takes the session and types the password; they stay attached until the
	// agent has its answer, so the program moving on is what ends the wait.
	person, err := server.DialAttach(ctx, server.DialOptions{Socket: sv.socket, Name: "person"}, server.AttachOptions{Session: id, Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	defer person.Close()
	// The person's terminal output is read (and dropped, but for the bell) so the server
	// never waits on it. Attached while the agent waits, it rings at once.
	personRang := make(chan struct{})
	go func() {
		rang := false
		for {
			data, ended, _, err := person.Recv()
			if err != nil || ended {
				return
			}
			if !rang && bytes.Contains(data, []byte("\a")) {
				rang = true
				close(personRang)
			}
		}
	}()
	select {
	case <-personRang:
	case <-ctx.Done():
		t.Fatal("a terminal attached while the agent waits for a person did not ring")
	}
	if err := person.Input([]byte(password + "\r")); err != nil {
		t.Fatal(err)
	}
	ask := next("ask")
	person.Close()
	text, _ := ask["text"].(string)
	ast, _ := ask["structured"].(map[string]any)
	if ask["isError"] == true || ast["person"] != session.PersonAnswered {
		t.Fatalf("ask_human: %v", ask)
	}
	if out, _ := ast["output"].(string); !strings.Contains(out, "authenticated with 19 characters") {
		t.Errorf("ask_human's output lacks the program's answer: %q", out)
	}
	if !strings.Contains(text, "The person answered") {
		t.Errorf("ask_human's text: %q", text)
	}
	list := next("list")
	if strings.Contains(list["text"].(string)+mustJSON(list["structured"]), "needs_human") {
		t.Errorf("the mark outlived the ask: %v", list["structured"])
	}
	switch mode {
	case "url":
		if elicited == nil {
			t.Fatalf("a client that declares URL elicitation was not sent the page")
		}
		p, _ := elicited["params"].(map[string]any)
		u, _ := p["url"].(string)
		if p["mode"] != "url" || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "token=") || !strings.HasSuffix(u, "#session="+id) {
			t.Errorf("elicitation: %v", p)
		}
		if ast["elicited"] != true {
			t.Errorf("the result does not say the page was sent: %v", ast)
		}
	case "plain":
		if elicited != nil {
			t.Errorf("a client without URL elicitation was sent one: %v", elicited)
		}
		if !strings.Contains(text, "ptyhub attach "+id) || !strings.Contains(text, "#session="+id) {
			t.Errorf("without elicitation the text must give the attach line and the page to relay: %q", text)
		}
	}
	stdin.Close()
	cmd.Wait()
	if strings.Contains(all.String(), password) {
		t.Errorf("the password reached the agent's client")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
