package testtool

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// unprivilegedEnv carries, into the re-run of a test as an ordinary user, the python
// interpreter that user can run.
const unprivilegedEnv = "PTYHUB_TEST_UNPRIVILEGED_PYTHON"

// Unprivileged makes test t run as an ordinary user, where what the kernel hides from a
// process's owner is hidden (root reads every process's environment, a process that is
// not dumpable included). Not root (or already re-run): it returns the python
// interpreter to use and done false, and the test goes on here. Root: it re-runs only t,
// from a copy of the test binary the user 65534 can execute, under setpriv as uid and
// gid 65534 (nobody), logs that run's output and fails t if it did not pass; it returns
// done true and the caller returns. Top-level tests only. A missing setpriv, or no
// python3 that user can run, skips t, or fails it when CI=true.
func Unprivileged(t *testing.T) (python string, done bool) {
	t.Helper()
	if p := os.Getenv(unprivilegedEnv); p != "" {
		return p, false
	}
	if os.Geteuid() != 0 {
		return Python(t), false
	}
	Need(t, "setpriv")
	asNobody := []string{"--reuid=65534", "--regid=65534", "--clear-groups"}
	for _, cand := range []string{Python(t), "/usr/bin/python3", "/usr/local/bin/python3"} {
		// Through a shell: setpriv itself may exec a path the user could not reach.
		check := append(asNobody, "/bin/sh", "-c", `test -x "$1" && exec "$1" -c "import ctypes"`, "sh", cand)
		if exec.Command("setpriv", check...).Run() == nil {
			python = cand
			break
		}
	}
	if python == "" {
		Missing(t, "no python3 the user 65534 can run")
	}
	dir, err := os.MkdirTemp("", "ptyhub-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(exe))
	if err := copyFile(exe, bin); err != nil {
		t.Fatal(err)
	}
	name := t.Name()
	cmd := exec.Command("setpriv", append(asNobody, bin, "-test.run=^"+regexp.QuoteMeta(name)+"$", "-test.v", "-test.count=1")...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "GOCOVERDIR", "PTYHUB_SOCKET":
			continue // the root's: nobody may not write there
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "HOME="+dir, "TMPDIR="+dir, "XDG_RUNTIME_DIR="+dir, "XDG_STATE_HOME="+filepath.Join(dir, "state"), unprivilegedEnv+"="+python)
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name+" ") {
		t.Fatalf("the run as uid 65534 did not pass: %v", err)
	}
	return "", true
}

// copyFile copies the file src to dst, executable by all.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
