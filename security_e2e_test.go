package ptyhub_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// secretValue returns a value no file or process holds before the test puts it there.
func secretValue(t *testing.T) string {
	b := make([]byte, 12)
	rand.Read(b)
	return "sEcReT-" + hex.EncodeToString(b)
}

// TestSecretsNotInParentEnviron: a credential in the agent's environment (its MCP
// configuration) is filtered from its sessions, and no session finds it in its parent's
// environment either (/proc/$PPID/environ): neither in ptyhub mcp's reaper nor, with
// --keep, in the reaper and the server that ptyhub mcp started.
func TestSecretsNotInParentEnviron(t *testing.T) {
	t.Parallel()
	h := svNew(t)
	secret := secretValue(t)
	agentHub := h.inDir(h.dir, "AWS_SECRET_ACCESS_KEY="+secret)
	// The parent (the reaper) and the grandparent's environments, NULs made newlines.
	const probe = `gp=$(awk '{print $4}' /proc/$PPID/stat); echo "ppid=$PPID gp=$gp"; tr '\0' '\n' </proc/$PPID/environ; echo ---; tr '\0' '\n' </proc/$gp/environ; echo "[${AWS_SECRET_ACCESS_KEY-unset}]"`
	check := func(name string, r map[string]any, wantGrandparent bool) {
		t.Helper()
		out, _ := r["output"].(string)
		if !strings.Contains(out, "PTYHUB_REAPER=1") || !strings.Contains(out, "[unset]") {
			t.Fatalf("%s: the probe did not read its parent's environment: %q", name, out)
		}
		parent, grand, _ := strings.Cut(out, "---")
		if strings.Contains(parent, secret) {
			t.Errorf("%s: the session's parent (the reaper) has the agent's secret in its environment", name)
		}
		if wantGrandparent && strings.Contains(grand, secret) {
			t.Errorf("%s: the session's grandparent (the server) has the agent's secret in its environment", name)
		}
	}
	// Hosted: the sessions run under ptyhub mcp's own reaper. ptyhub mcp itself has the
	// secret (its agent gave it), so only the reaper is checked.
	a := agentHub.agent()
	check("hosted", a.call("exec_command", map[string]any{"cmd": probe, "yield_time_ms": 20000}), false)
	// --keep: the sessions run in the per-user server, which this ptyhub mcp starts.
	k := agentHub.agent("--keep")
	check("--keep", k.call("exec_command", map[string]any{"cmd": probe, "yield_time_ms": 20000}), true)
	pid := h.serverPID()
	if pid == 0 {
		t.Fatal("no server was started")
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), secret) {
		t.Errorf("the server ptyhub mcp started (pid %d) has the agent's secret in its environment", pid)
	}
	if !strings.Contains(string(env), "XDG_STATE_HOME=") {
		t.Errorf("the server's environment lost what it needs: %q", env)
	}
}

// TestCLIRefusesForeignSocketDir: another user made the default socket directory
// (/tmp/ptyhub-UID, no PTYHUB_SOCKET, no XDG_RUNTIME_DIR) before the user's first command:
// the CLI and ptyhub mcp say so at once, naming the directory and its owner, and start
// no server.
func TestCLIRefusesForeignSocketDir(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		testtool.Missing(t, "needs root to make a directory as another user")
	}
	testtool.Need(t, "setpriv")
	h := svNew(t)
	base := t.TempDir()
	os.Chmod(base, 0o1777)
	os.Chmod(filepath.Dir(base), 0o711)
	dir := filepath.Join(base, "ptyhub-"+strconv.Itoa(os.Getuid()))
	if out, err := osexec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mkdir", "-m", "0700", dir).CombinedOutput(); err != nil {
		t.Fatalf("mkdir as nobody: %v %s", err, out)
	}
	var env []string
	for _, kv := range h.env {
		if !strings.HasPrefix(kv, "PTYHUB_SOCKET=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") && !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	c := *h
	c.env = append(env, "TMPDIR="+base)
	want := "refusing " + dir + ": owned by uid 65534"
	for _, args := range [][]string{{"ls"}, {"exec", "--", "true"}, {"mcp"}} {
		out, errs, code := c.run(args...)
		if code == 0 || !strings.Contains(errs, want) {
			t.Errorf("ptyhub %s: status %d, stdout %q, stderr %q; want a refusal saying %q", args, code, out, errs, want)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("something was made in the other user's directory: %v", ents)
	}
}

// TestTranscriptHiddenRawInput: input typed while the terminal has echo off is kept only
// as its length in raw mode too (prompt_toolkit's is_password, `stty raw -echo`), not
// only in line mode: the secret is in no file under the state directory (transcript,
// text log, spill) and in no result.
func TestTranscriptHiddenRawInput(t *testing.T) {
	t.Parallel()
	testtool.NeedPython(t, "prompt_toolkit")
	for _, c := range []struct {
		name, cmd, enter string
	}{
		{"stty raw -echo", `stty raw -echo; printf 'Password: '; pw=$(head -c 24); stty sane; echo; echo "got ${#pw} chars"`, ""},
		{"prompt_toolkit is_password", `python3 -c 'from prompt_toolkit import prompt; p = prompt("Password: ", is_password=True); print("got %d chars" % len(p))'`, "\r"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, cl, state := trManager(t, session.Options{})
			secret := secretValue(t)[:24]
			r := exec(t, cl, session.ExecRequest{Cmd: c.cmd, WaitFor: "Password:", YieldTimeMs: ms(20000)})
			results := []*session.Result{r}
			if !strings.Contains(r.Output, "Password:") {
				t.Fatalf("no prompt: %+v", r)
			}
			// Half in one write, the rest key by key, as a human types.
			typed := secret + c.enter
			results = append(results, write(t, cl, session.WriteRequest{SessionID: r.SessionID, Chars: typed[:12], YieldTimeMs: ms(50)}))
			for _, ch := range typed[12:] {
				results = append(results, write(t, cl, session.WriteRequest{SessionID: r.SessionID, Chars: string(ch), YieldTimeMs: ms(50)}))
			}
			r = write(t, cl, session.WriteRequest{SessionID: r.SessionID, WaitFor: "got 24 chars", YieldTimeMs: ms(20000)})
			results = append(results, r)
			path, _ := trFinish(t, state, r)
			var all strings.Builder
			for _, res := range results {
				all.WriteString(res.Output)
			}
			if strings.Contains(all.String(), secret[:12]) || strings.Contains(all.String(), secret[12:]) {
				t.Errorf("a result shows the secret: %q", all.String())
			}
			if !strings.Contains(all.String(), "got 24 chars") {
				t.Errorf("the program did not get the input: %q", all.String())
			}
			data, _ := os.ReadFile(path)
			if !strings.Contains(string(data), "bytes of hidden input]") {
				t.Errorf("no hidden-input marker in %s", data)
			}
			_, evs := trEvents(t, path)
			var input strings.Builder
			for _, e := range evs {
				if e[1] == "i" {
					input.WriteString(e[2].(string))
				}
			}
			if in := input.String(); strings.Contains(in, secret[:12]) || strings.Contains(in, secret[12:]) {
				t.Errorf("the transcript's input events hold the secret: %q", in)
			}
			n := 0
			filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				n++
				if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
					t.Errorf("%s contains the secret", p)
				}
				return nil
			})
			if n == 0 {
				t.Error("no file under the state directory")
			}
		})
	}
}
