package ptyhub_test

import (
	"context"
	"encoding/json"
	"os"
	oexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/screen"
	"github.com/ptyhub/ptyhub/session"
)

// End-to-end: the call returns when the real programs agents drive wait for input, and
// not while they are in a timed wait, wait for a terminal query's answer, or wait on a
// child that works. Each assertion is on what the result says; yields are generous, so a
// wrong verdict shows as the wrong returned_because, never as a timing.

// wpScreen renders the session's output up to off as a terminal of rows×cols shows it.
func wpScreen(t *testing.T, c *session.Client, id string, off int64, rows, cols int) string {
	t.Helper()
	from := int64(0)
	r, err := c.Read(context.Background(), session.ReadRequest{SessionID: id, View: "raw", From: &from, To: &off, MaxOutputTokens: new(int64(1 << 20))})
	if err != nil {
		t.Fatal(err)
	}
	term := screen.NewTerminal(rows, cols, nil)
	defer term.Close()
	term.Write([]byte(r.Output))
	return term.Snapshot().Text()
}

func wpExpect(t *testing.T, what string, r *session.Result, because, contains string) {
	t.Helper()
	if r.ReturnedBecause != because || !strings.Contains(r.Output, contains) {
		t.Fatalf("%s: returned because %q (detection %q) after %.0f ms with %q, want %s with %q",
			what, r.ReturnedBecause, r.WaitDetection, r.WallTimeMs, r.Output, because, contains)
	}
}

// vim: typing text and Escape returns once vim has left insert mode and drawn the text
// (it waits out its escape timeout first), and :wq returns the exit in the same call
// (vim asks the terminal about its cursor with DECRQM on the way out).
func TestWaitingVimE2E(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "vim")
	c := wE2EClient(t)
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "note.txt")
	r := exec(t, c, session.ExecRequest{Argv: []string{"vim", "-u", "DEFAULTS", "-i", "NONE", "-n", file}, YieldTimeMs: new(int64(30_000))})
	defer c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	wpExpect(t, "start", r, session.BecauseWaitingForInput, "")
	for i, word := range []string{"hello", " world"} {
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "A" + word, Keys: []string{"Escape"}, YieldTimeMs: new(int64(30_000))})
		wpExpect(t, "insert and Escape", r, session.BecauseWaitingForInput, "")
		t.Logf("%q+Escape: %s after %.0f ms", word, r.WaitDetection, r.WallTimeMs)
		scr := wpScreen(t, c, r.SessionID, r.NextOffset, 24, 80)
		want := strings.Join([]string{"hello", " world"}[:i+1], "")
		if !strings.HasPrefix(scr, want) || strings.Contains(scr, "-- INSERT --") {
			t.Fatalf("after %q and Escape the screen at the return is not vim in normal mode showing %q:\n%s", word, want, scr)
		}
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: ":wq", Keys: []string{"Enter"}, YieldTimeMs: new(int64(30_000))})
	wpExpect(t, ":wq", r, session.BecauseExit, "")
	t.Logf(":wq: exit after %.0f ms", r.WallTimeMs)
	if b, err := os.ReadFile(file); err != nil || string(b) != "hello world\n" {
		t.Fatalf("vim wrote %q (%v), want \"hello world\\n\"", b, err)
	}
}

// node: .exit returns the exit (node exits after a short timer wait), and a readline
// wizard with a 1.5 s asynchronous step between two questions returns at the second
// question, not while the timer runs with the terminal still in node's epoll set.
func TestWaitingNodeE2E(t *testing.T) {
	t.Parallel()
	testtool.KernelOnly(t, "node's timer wait beside the terminal (its wizard's async step) is told from a prompt by the wait's timeout, which only the kernel's view reads")
	testtool.Need(t, "node")
	c := wE2EClient(t)
	ctx := context.Background()

	r := exec(t, c, session.ExecRequest{Argv: []string{"node"}, YieldTimeMs: new(int64(30_000))})
	defer c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	wpExpect(t, "node REPL", r, session.BecauseWaitingForInput, "> ")
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "6*7\n", YieldTimeMs: new(int64(30_000))})
	wpExpect(t, "6*7", r, session.BecauseWaitingForInput, "42")
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: ".exit\n", YieldTimeMs: new(int64(30_000))})
	wpExpect(t, ".exit", r, session.BecauseExit, "")
	t.Logf(".exit: exit after %.0f ms", r.WallTimeMs)

	wizard := filepath.Join(t.TempDir(), "wizard.js")
	err := os.WriteFile(wizard, []byte(`
const rl = require('readline').createInterface({input: process.stdin, output: process.stdout});
rl.question('Project name? ', name => {
  console.log('Creating ' + name + '...');
  setTimeout(() => {
    rl.question('Use TypeScript? ', ts => {
      console.log('Done: ' + name + ' ts=' + ts);
      rl.close();
    });
  }, 1500);
});
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	r = exec(t, c, session.ExecRequest{Argv: []string{"node", wizard}, YieldTimeMs: new(int64(30_000))})
	defer c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	wpExpect(t, "wizard start", r, session.BecauseWaitingForInput, "Project name? ")
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "demo\n", YieldTimeMs: new(int64(30_000))})
	wpExpect(t, "wizard step", r, session.BecauseWaitingForInput, "Use TypeScript? ")
	t.Logf("wizard step: %s after %.0f ms", r.WaitDetection, r.WallTimeMs)
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "yes\n", YieldTimeMs: new(int64(30_000))})
	wpExpect(t, "wizard end", r, session.BecauseExit, "Done: demo ts=yes")

	// A question asked while an idle child holds a pipe the program selects on with the
	// terminal is a prompt: only a child that works keeps the wait from being one.
	testtool.Need(t, "python3")
	r, err = c.Exec(ctx, session.ExecRequest{Argv: []string{"python3", "-c", `
import select, subprocess, sys
p = subprocess.Popen(['sleep', '600'], stdout=subprocess.PIPE)
sys.stdout.write('Deploy? '); sys.stdout.flush()
select.select([0, p.stdout], [], [])
print('deploy=' + sys.stdin.readline().strip()); p.kill()
`}, YieldTimeMs: new(int64(30_000))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	wpExpect(t, "question beside an idle child", r, session.BecauseWaitingForInput, "Deploy? ")
	if r.WaitDetection != "tty_poll" {
		t.Errorf("question beside an idle child: wait_detection %q, want tty_poll", r.WaitDetection)
	}
	r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "y\n", YieldTimeMs: new(int64(30_000))})
	wpExpect(t, "answer beside an idle child", r, session.BecauseExit, "deploy=y")
}

// An npm-init-style questionnaire returns at each of its questions and at the exit: one
// that checks each answer asynchronously (a timer standing for the registry lookup that
// create-* tools make), then npm init itself.
func TestWaitingQuestionnaireE2E(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "node", "npm")
	c := wE2EClient(t)
	ctx := context.Background()

	script := filepath.Join(t.TempDir(), "init.js")
	err := os.WriteFile(script, []byte(`
const rl = require('readline').createInterface({input: process.stdin, output: process.stdout});
const ask = q => new Promise(res => rl.question(q, res));
const check = a => new Promise(res => setTimeout(() => res(a), 300));
(async () => {
  const answers = [];
  for (const q of ['package name: (demo) ', 'version: (1.0.0) ', 'description: ', 'license: (ISC) ']) {
    answers.push(await check(await ask(q)));
  }
  console.log('About to write: ' + JSON.stringify(answers));
  const ok = await ask('Is this OK? (yes) ');
  await check(ok);
  console.log('wrote ' + ok);
  rl.close();
})();
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	r := exec(t, c, session.ExecRequest{Argv: []string{"node", script}, YieldTimeMs: new(int64(30_000))})
	defer c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	for _, q := range []string{"package name: (demo) ", "version: (1.0.0) ", "description: ", "license: (ISC) ", "Is this OK? (yes) "} {
		wpExpect(t, "questionnaire", r, session.BecauseWaitingForInput, q)
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "\n", YieldTimeMs: new(int64(30_000))})
	}
	wpExpect(t, "questionnaire end", r, session.BecauseExit, "wrote ")

	dir := filepath.Join(t.TempDir(), "demo-pkg")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"npm_config_update_notifier": "false", "npm_config_fund": "false",
		"npm_config_audit": "false", "npm_config_cache": filepath.Join(t.TempDir(), "npm-cache"),
		"npm_config_userconfig": filepath.Join(t.TempDir(), "npmrc")}
	r = exec(t, c, session.ExecRequest{Argv: []string{"npm", "init"}, Workdir: dir, Env: env, YieldTimeMs: new(int64(60_000))})
	defer c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	// npm's questions change between versions: each return must be at one (a last line
	// like "version: (1.0.0) "), until "Is this OK?", and the call after it at the exit.
	question := regexp.MustCompile(`(?m)^[a-z ]+: (\(.*\) )?$`)
	for i := 0; ; i++ {
		if i > 20 {
			t.Fatalf("npm init asked more than 20 questions: %q", r.Output)
		}
		if strings.Contains(r.Output, "Is this OK? ") {
			wpExpect(t, "the last question", r, session.BecauseWaitingForInput, "Is this OK? ")
		} else if r.ReturnedBecause != session.BecauseWaitingForInput || !question.MatchString(r.Output) {
			t.Fatalf("question %d: returned because %q (detection %q) after %.0f ms with %q, want waiting_for_input at a question",
				i, r.ReturnedBecause, r.WaitDetection, r.WallTimeMs, r.Output)
		}
		last := strings.Contains(r.Output, "Is this OK? ")
		answer := "\n"
		if strings.Contains(r.Output, "description: ") {
			answer = "a demo\n"
		}
		r = write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: answer, YieldTimeMs: new(int64(60_000))})
		if last {
			break
		}
	}
	wpExpect(t, "npm init end", r, session.BecauseExit, "")
	if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err != nil || !strings.Contains(string(b), `"a demo"`) {
		t.Fatalf("package.json: %q (%v), want the description typed", b, err)
	}
}

// apt-get install polls the terminal together with dpkg's pty and a pipe while dpkg
// works: the call returns once, at the exit. Needs root and Debian's mirror (CI has both).
func TestWaitingAptGetE2E(t *testing.T) {
	t.Parallel() // the only test that runs apt-get or dpkg; its sessions are its own
	testtool.KernelOnly(t, "apt-get polls the terminal beside dpkg's pty; a wait on a working child is told only by the kernel's view of the wait")
	testtool.Need(t, "apt-get", "dpkg")
	if os.Geteuid() != 0 {
		testtool.Missing(t, "apt-get install needs root")
	}
	// The first of a few tiny packages without dependencies that is not installed: the
	// test installs and purges it, and never removes what the machine already had.
	pkg := ""
	for _, p := range []string{"sl", "hello", "figlet", "cowsay"} {
		if oexec.Command("dpkg", "-s", p).Run() != nil {
			pkg = p
			break
		}
	}
	if pkg == "" {
		testtool.Missing(t, "sl, hello, figlet and cowsay are all installed; the test installs and purges one of them")
	}
	c := wE2EClient(t)
	ctx := context.Background()
	env := map[string]string{"DEBIAN_FRONTEND": "readline"}
	lock := []string{"-o", "DPkg::Lock::Timeout=300"}
	defer oexec.Command("apt-get", "purge", "-y", "-q", pkg).Run()
	r := exec(t, c, session.ExecRequest{Argv: append(append([]string{"apt-get", "install", "-y", "--no-install-recommends"}, lock...), pkg), Env: env, YieldTimeMs: new(int64(600_000))})
	defer c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	if r.ReturnedBecause != session.BecauseExit {
		t.Fatalf("apt-get install returned because %q (detection %q) with:\n%s\nwant one call to its exit", r.ReturnedBecause, r.WaitDetection, r.Output)
	}
	if r.ExitCode == nil || *r.ExitCode != 0 {
		testtool.Missing(t, "apt-get install "+pkg+" failed (no mirror?):\n"+r.Output)
	}
	r = exec(t, c, session.ExecRequest{Argv: append(append([]string{"apt-get", "purge", "-y"}, lock...), pkg), Env: env, YieldTimeMs: new(int64(600_000))})
	defer c.Kill(ctx, session.KillRequest{SessionID: r.SessionID, Remove: true})
	if r.ReturnedBecause != session.BecauseExit || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("apt-get purge returned because %q (detection %q) with:\n%s\nwant one call to its exit 0", r.ReturnedBecause, r.WaitDetection, r.Output)
	}
}

// Through ptyhub mcp from the official TypeScript SDK: vim's insert+Escape returns at
// normal mode with the text drawn, :wq and node's .exit return the exit, and
// structuredContent names the rule that decided (wait_detection).
func TestWaitingProgramsMCPE2E(t *testing.T) {
	t.Parallel()
	node := testtool.Path(t, "node")
	testtool.Need(t, "vim")
	dir := e2eClientDir(t)
	bin := e2eBuildPtyhub(t)
	file := filepath.Join(t.TempDir(), "note.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := oexec.CommandContext(ctx, node, filepath.Join(dir, "waiting.mjs"), bin, file)
	sv := svNew(t)
	cmd.Dir, cmd.Env = sv.dir, append(sv.env, "PWD="+sv.dir)
	out, err := cmd.Output()
	steps := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			name, _ := m["step"].(string)
			steps[name] = m
		}
	}
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	check := func(name, because, detection string) {
		t.Helper()
		st, _ := steps[name]["structured"].(map[string]any)
		if st["returned_because"] != because || detection != "" && st["wait_detection"] != detection {
			t.Errorf("%s: returned_because %v, wait_detection %v; want %s %s (step %v)", name, st["returned_because"], st["wait_detection"], because, detection, steps[name])
		}
	}
	// The kernel's view names the poll on the terminal; the portable paths see a quiet
	// program at a prompt.
	rule := "tty_poll"
	if testtool.Portable {
		rule = "quiet"
	}
	check("vim", "waiting_for_input", rule)
	check("vim_insert", "waiting_for_input", rule)
	check("vim_wq", "exit", "")
	check("node", "waiting_for_input", rule)
	check("node_exit", "exit", "")
	if b, err := os.ReadFile(file); err != nil || string(b) != "hello\n" {
		t.Errorf("vim wrote %q (%v), want \"hello\\n\"", b, err)
	}
	if _, ok := steps["closed"]; !ok {
		t.Errorf("the client did not close cleanly: %s", out)
	}
}
