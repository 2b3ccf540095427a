package ptyhub_test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
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
			r := exec(t, cl, session.ExecRequest{Cmd: c.cmd, WaitFor: "Password:", YieldTimeMs: new(int64(20000))})
			results := []*session.Result{r}
			if !strings.Contains(r.Output, "Password:") {
				t.Fatalf("no prompt: %+v", r)
			}
			// Half in one write, the rest key by key, as a human types.
			typed := secret + c.enter
			results = append(results, write(t, cl, session.WriteRequest{SessionID: r.SessionID, Chars: typed[:12], YieldTimeMs: new(int64(50))}))
			for _, ch := range typed[12:] {
				results = append(results, write(t, cl, session.WriteRequest{SessionID: r.SessionID, Chars: string(ch), YieldTimeMs: new(int64(50))}))
			}
			r = write(t, cl, session.WriteRequest{SessionID: r.SessionID, WaitFor: "got 24 chars", YieldTimeMs: new(int64(20000))})
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

// nsHub returns a copy of h whose commands (the CLI, ptyhub mcp, and the server they
// start) run in a private mount namespace in which h's state directory is a tmpfs that
// setup (a shell script, $STATE its path) prepared: made read-only, or filled. The
// namespace lives as long as the test, or as long as the server started in it.
func nsHub(t *testing.T, h *svHub, setup string) *svHub {
	t.Helper()
	if os.Getuid() != 0 {
		testtool.Missing(t, "needs root to mount a tmpfs in a private mount namespace")
	}
	testtool.Need(t, "unshare", "nsenter")
	var state string
	for _, kv := range h.env {
		if v, ok := strings.CutPrefix(kv, "XDG_STATE_HOME="); ok {
			state = v
		}
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	holder := osexec.Command("unshare", "-m", "--propagation", "private", "sh", "-ec",
		`mount -t tmpfs -o size=64k,mode=0700 tmpfs "$STATE"; `+setup+`; echo ready; exec cat >/dev/null`)
	holder.Env = append(os.Environ(), "STATE="+state)
	holder.Stderr = os.Stderr
	stdin, out := testtool.StartPiped(t, holder)
	t.Cleanup(func() { stdin.Close(); holder.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the mount namespace was not set up: %q %v", line, err)
	}
	wrapper := filepath.Join(t.TempDir(), "ptyhub")
	script := fmt.Sprintf("#!/bin/sh\nexec nsenter -m -t %d --wd=\"$(pwd)\" %s \"$@\"\n", holder.Process.Pid, h.bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := *h
	c.bin = wrapper
	return &c
}

// execJSON runs `ptyhub exec --json args…` and returns its result.
func (h *svHub) execJSON(args ...string) session.Result {
	h.t.Helper()
	out := h.ok(append([]string{"exec", "--json"}, args...)...)
	var r session.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		h.t.Fatalf("%v: %s", err, out)
	}
	return r
}

// checkStateDirFault: with the state directory read-only or full, the CLI and an agent
// work; each result says the transcript is not recorded; the server's and the agent's
// sessions have different short ids, past those recorded before, and `ptyhub kill ID`
// ends the session of that id.
func checkStateDirFault(t *testing.T, h *svHub) {
	r1 := h.execJSON("--", "echo", "first")
	if r1.Output != "first\n" || !slices.ContainsFunc(r1.Notices.Warnings, func(w string) bool { return strings.HasPrefix(w, "transcript not recorded: ") }) {
		t.Errorf("exec: output %q, warnings %q; want a warning that the transcript is not recorded", r1.Output, r1.Notices.Warnings)
	}
	a := h.agent()
	ar := a.call("exec_command", map[string]any{"cmd": "echo from-agent; sleep 600", "yield_time_ms": 20000, "wait_for": "from-agent"})
	warns, _ := ar["warnings"].([]any)
	if !slices.ContainsFunc(warns, func(w any) bool { s, _ := w.(string); return strings.HasPrefix(s, "transcript not recorded: ") }) {
		t.Errorf("exec_command: warnings %q; want a warning that the transcript is not recorded", warns)
	}
	agentID, _ := ar["session_id"].(string)
	out, _, _ := h.run("exec", "--json", "--yield", "100ms", "--", "sleep", "600") // still running: status 124
	var r2 session.Result
	if err := json.Unmarshal([]byte(out), &r2); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ids := []string{r1.SessionID, agentID, r2.SessionID}
	seen := map[string]bool{}
	for _, id := range ids {
		n, _ := strconv.Atoi(id)
		if n <= 40 || seen[id] {
			t.Errorf("short ids %v: reused, or not past the 40 recorded before", ids)
		}
		seen[id] = true
	}
	h.ok("kill", agentID)
	_, l := h.lsIDs()
	for _, in := range l.Sessions {
		if in.SessionID == r2.SessionID && in.State != session.StateRunning {
			t.Errorf("ptyhub kill %s ended the server's session %s", agentID, r2.SessionID)
		}
	}
	h.ok("kill", r2.SessionID)
}

// TestReadOnlyStateDir: a read-only state directory costs the transcripts and nothing
// else: the server starts (without its log), the CLI and agents work, results say the
// transcript is not recorded, and short ids stay unique.
func TestReadOnlyStateDir(t *testing.T) {
	t.Parallel()
	h := nsHub(t, svNew(t), `mkdir -m 0700 "$STATE/ptyhub"; echo 40 >"$STATE/ptyhub/session-ids"; mount -o remount,ro "$STATE"`)
	if out, errs, code := h.run("ls"); code != 0 {
		t.Fatalf("ptyhub ls with a read-only state directory: status %d: %s %s", code, out, errs)
	}
	checkStateDirFault(t, h)
}

// TestFullStateDir: a full state directory: the same.
func TestFullStateDir(t *testing.T) {
	t.Parallel()
	h := nsHub(t, svNew(t), `mkdir -m 0700 "$STATE/ptyhub"; echo 40 >"$STATE/ptyhub/session-ids"; touch "$STATE/ptyhub/session-ids.lock"; dd if=/dev/zero of="$STATE/fill" bs=4k count=64 2>/dev/null || true`)
	checkStateDirFault(t, h)
}
