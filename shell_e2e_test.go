package ptyhub_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// TestShellForHumans: `ptyhub shell` starts the user's $SHELL integrated, attached to
// their terminal; what they run there is in the listing (directory, last command and
// its exit code) for their agent, which can also type a command and get only its
// output and exit code; ctrl-] detaches and `ptyhub shell --name` attaches again.
func TestShellForHumans(t *testing.T) {
	t.Parallel()
	bash := testtool.Path(t, "bash")
	h := svNew(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("PS1='my-prompt$ '\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h = h.inDir(h.dir, "HOME="+home, "SHELL="+bash)
	tm := h.terminal(24, 100, true, "shell", "--name", "mine")
	off := tm.waitFor(0, "my-prompt$ ")
	tm.typ("cd " + home + " && ls no-such-file\r")
	off = tm.waitFor(off, "No such file")
	off = tm.waitFor(off, "my-prompt$ ")

	var l session.ListResult
	if err := json.Unmarshal([]byte(h.ok("ls", "--json")), &l); err != nil || len(l.Sessions) != 1 {
		t.Fatalf("ls: %v %+v", err, l)
	}
	st := l.Sessions[0].Shell
	if st == nil || st.Cwd != home || st.LastCommand != "cd "+home+" && ls no-such-file" || st.LastExitCode == nil || *st.LastExitCode != 2 {
		t.Fatalf("listing of the human's shell: %+v", st)
	}
	if out := h.ok("ls"); !strings.Contains(out, "(last: cd ") || !strings.Contains(out, filepath.Base(home)) {
		t.Errorf("ptyhub ls shows no CWD or last command:\n%s", out)
	}
	if scr := h.ok("screen", "mine"); strings.Contains(scr, "133;") || !strings.Contains(scr, "my-prompt$ ") {
		t.Errorf("the screen view: %q", scr)
	}

	// The agent's turn, while the human is attached.
	var r session.Result
	if err := json.Unmarshal([]byte(h.ok("write", "mine", "--json", "echo from-agent; exit 3 | true\n")), &r); err != nil {
		t.Fatal(err)
	}
	if r.Shell == nil || r.Shell.ExitCode == nil || *r.Shell.ExitCode != 0 || r.Shell.Command != "echo from-agent; exit 3 | true" || !strings.HasSuffix(r.Output, "from-agent\n") || r.WaitDetection != session.WaitShell {
		t.Fatalf("agent's command: %s (%s), shell %+v, output %q", r.ReturnedBecause, r.WaitDetection, r.Shell, r.Output)
	}
	off = tm.waitFor(off, "from-agent")

	tm.typ("\x1d") // ctrl-]
	if code := tm.wait(); code != 0 {
		t.Errorf("ptyhub shell: status %d after detach", code)
	}
	tm.waitFor(off, "detached from session")
	tm.sane()

	tm2 := h.terminal(24, 100, true, "shell", "--name", "mine")
	off = tm2.waitFor(0, "from-agent") // the same session, repainted
	tm2.typ("exit\r")
	if code := tm2.wait(); code != 0 {
		t.Errorf("ptyhub shell: status %d after exit", code)
	}
	tm2.waitFor(off, "exited with code 0")
}
