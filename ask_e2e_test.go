package ptyhub_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
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
	ac := startAskClient(t, ctx, node, dir, sv, mode)
	defer func() {
		cancel()
		ac.cmd.Wait()
	}()
	exec := ac.next(t, "exec")
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
	rang := readUntilBell(watch, false)
	ac.stdin.Write([]byte("go\n"))
	ac.next(t, "asking")
	checkLsNeedsHuman(t, sv, id)
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
	select {
	case <-readUntilBell(person, true):
	case <-ctx.Done():
		t.Fatal("a terminal attached while the agent waits for a person did not ring")
	}
	if err := person.Input([]byte(password + "\r")); err != nil {
		t.Fatal(err)
	}
	ask := ac.next(t, "ask")
	person.Close()
	checkAskAnswered(t, ac, ask, mode, id)
	ac.stdin.Close()
	ac.cmd.Wait()
	if strings.Contains(ac.all.String(), password) {
		t.Errorf("the password reached the agent's client")
	}
}

// askClient is the TypeScript MCP client of testdata/mcpclient/ask.mjs, run by
// startAskClient: it prints one JSON line per step.
type askClient struct {
	cmd      *osexec.Cmd
	stdin    io.WriteCloser
	stderr   bytes.Buffer
	all      bytes.Buffer // everything the agent's client saw
	lines    chan map[string]any
	elicited map[string]any // the elicitation the client was sent, once next has read past it
}

// startAskClient starts ask.mjs in mode against sv's binary and a goroutine that
// reads its lines; both end with ctx or when the client's stdin is closed.
func startAskClient(t *testing.T, ctx context.Context, node, dir string, sv *svHub, mode string) *askClient {
	t.Helper()
	ac := &askClient{lines: make(chan map[string]any)}
	ac.cmd = osexec.CommandContext(ctx, node, filepath.Join(dir, "ask.mjs"), sv.bin, mode)
	ac.cmd.Dir, ac.cmd.Env = sv.dir, append(sv.env, "PWD="+sv.dir)
	ac.cmd.Stderr = &ac.stderr
	ac.stdin, _ = ac.cmd.StdinPipe()
	pipe, _ := ac.cmd.StdoutPipe()
	if err := ac.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The reader of the client's lines: owned by this test, ends with the client's stdout.
	go func() {
		defer close(ac.lines)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			ac.all.Write(sc.Bytes())
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				ac.lines <- m
			}
		}
	}()
	return ac
}

// next returns the client's next line of the given step, remembering an elicitation
// it reads past; it fails the test if the client ends first.
func (ac *askClient) next(t *testing.T, step string) map[string]any {
	t.Helper()
	for m := range ac.lines {
		if m["step"] == step {
			return m
		}
		if m["step"] == "elicit" {
			ac.elicited = m
		}
	}
	t.Fatalf("the client ended before step %s: %s", step, ac.stderr.String())
	return nil
}

// readUntilBell starts a goroutine, owned by the test, that reads a's output and
// closes the returned channel at the first bell. It ends then, or when a ends or
// is closed; if drain, it reads on (dropping the output) until a ends or is closed.
func readUntilBell(a *server.Attach, drain bool) <-chan struct{} {
	rang := make(chan struct{})
	go func() {
		bell := false
		for {
			data, ended, _, err := a.Recv()
			if err != nil || ended {
				return
			}
			if !bell && bytes.Contains(data, []byte("\a")) {
				bell = true
				close(rang)
				if !drain {
					return
				}
			}
		}
	}()
	return rang
}

// checkLsNeedsHuman waits for `ptyhub ls` to mark session id as needing a person
// and checks that it shows the agent's message and the password prompt.
func checkLsNeedsHuman(t *testing.T, sv *svHub, id string) {
	t.Helper()
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
}

// checkAskAnswered checks ask_human's result ask after the person typed the
// password: answered, with the program's output; the mark gone from the list that
// follows; the page elicited (mode "url") or given in the text to relay ("plain").
func checkAskAnswered(t *testing.T, ac *askClient, ask map[string]any, mode, id string) {
	t.Helper()
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
	list := ac.next(t, "list")
	if strings.Contains(list["text"].(string)+mustJSON(list["structured"]), "needs_human") {
		t.Errorf("the mark outlived the ask: %v", list["structured"])
	}
	switch mode {
	case "url":
		if ac.elicited == nil {
			t.Fatalf("a client that declares URL elicitation was not sent the page")
		}
		p, _ := ac.elicited["params"].(map[string]any)
		u, _ := p["url"].(string)
		if p["mode"] != "url" || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "token=") || !strings.HasSuffix(u, "#session="+id) {
			t.Errorf("elicitation: %v", p)
		}
		if ast["elicited"] != true {
			t.Errorf("the result does not say the page was sent: %v", ast)
		}
	case "plain":
		if ac.elicited != nil {
			t.Errorf("a client without URL elicitation was sent one: %v", ac.elicited)
		}
		if !strings.Contains(text, "ptyhub attach "+id) || !strings.Contains(text, "#session="+id) {
			t.Errorf("without elicitation the text must give the attach line and the page to relay: %q", text)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
