// Command record re-records the corpus of real tools under testdata/corpus: each tool's
// raw output on a pseudo-terminal (24×80) under the agent profile and two other choices
// of environment, and on a pipe with TERM=dumb NO_COLOR=1, with the exit code of each
// run (-modes picks some of them). The corpus test replays these
// bytes through the text view; the facts each tool's output must keep are written by
// hand in testdata/corpus/<tool>/facts and are not touched here.
//
// Run it from the repository's root: go run ./termtext/internal/record [tool...]
// It needs the tools themselves (cargo, npm, apt-get as root, …); a tool that is
// missing is reported and left as it was. Each run starts from a fresh directory made
// by the tool's setup script, so every mode sees the same work to do.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// A tool is one command of the corpus. setup runs with bash -e in a fresh directory
// (the working directory of cmd) and is not recorded; cmd runs with bash -c there.
// $PORT is a local HTTP server serving $SRV (which setup may fill).
type tool struct {
	name, needs, setup, cmd string
}

var tools = []tool{
	{name: "cargo", needs: "cargo", setup: `
cargo new --vcs none --lib -q parse && cargo new --vcs none --lib -q render && cargo new --vcs none -q app
cat > parse/src/lib.rs <<'R'
pub fn parse(s: &str) -> Vec<u32> { let mut v = Vec::new(); for w in s.split(',') { v.push(w.trim().parse().unwrap_or(0)); } v }
R
cat > render/src/lib.rs <<'R'
pub fn render(v: &[u32]) -> String { let mut out = String::new(); for x in v { out += &format!("{x};"); } out }
R
cat > app/src/main.rs <<'R'
fn main() {
    let mut unused = 1;
    let v = parse::parse("1, 2, 3");
    println!("{}", render::render(&v));
    let _ = unused;
}
R
printf 'parse = { path = "../parse" }\nrender = { path = "../render" }\n' >> app/Cargo.toml
`, cmd: `cd app && cargo build --offline`},
	{name: "pip", needs: "pip3", setup: `
mkdir -p srv/simple/demo-corpus
python3 - <<'P'
import os, zipfile
w = "srv/simple/demo-corpus/demo_corpus-1.0-py3-none-any.whl"
with zipfile.ZipFile(w, "w") as z:
    z.writestr("demo/__init__.py", "X = 1\n")
    z.writestr("demo/blob.bin", os.urandom(40000000))
    z.writestr("demo_corpus-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-corpus\nVersion: 1.0\n")
    z.writestr("demo_corpus-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: corpus\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("demo_corpus-1.0.dist-info/RECORD", "")
open("srv/simple/demo-corpus/index.html", "w").write('<a href="%s">%s</a>\n' % (os.path.basename(w), os.path.basename(w)))
P
`, cmd: `pip3 install --no-cache-dir --disable-pip-version-check --target out --index-url http://127.0.0.1:$PORT/simple demo-corpus`},
	{name: "npm", needs: "npm", setup: `echo '{"name":"corpus","version":"1.0.0","private":true}' > package.json`,
		cmd: `npm install --cache "$PWD/.npm-cache" --no-fund is-number@7.0.0 left-pad@1.3.0 && npm install --cache "$PWD/.npm-cache" --no-fund is-number@99.0.0`},
	{name: "apt-get", needs: "apt-get", cmd: `apt-get install --reinstall -y --no-install-recommends hello`},
	{name: "git-clone", needs: "git", setup: `
git init -q src && cd src
for i in $(seq 1 300); do head -c 2000 /dev/urandom | base64 > f$i.txt; done
git add . && git -c user.name=c -c user.email=c@c commit -q -m one
`, cmd: `git clone --progress "file://$PWD/src" dst`},
	{name: "pytest", needs: "/usr/bin/python3", setup: `
cat > test_demo.py <<'R'
import warnings
def test_ok(): assert 1 + 1 == 2
def test_warns():
    warnings.warn("old_api is deprecated", DeprecationWarning)
def test_fails():
    assert [1, 2, 3] == [1, 2, 4]
R
`, cmd: `/usr/bin/python3 -m pytest -p no:cacheprovider test_demo.py`},
	{name: "wget", needs: "wget", setup: `mkdir -p srv && head -c 8000000 /dev/zero > srv/big.bin`,
		cmd: `wget --limit-rate=4m -O /dev/null http://127.0.0.1:$PORT/big.bin`},
	{name: "curl", needs: "curl", setup: `mkdir -p srv && head -c 6000000 /dev/zero > srv/big.bin`,
		cmd: `curl --limit-rate 1M -o /dev/null http://127.0.0.1:$PORT/big.bin && curl -fsS http://127.0.0.1:$PORT/missing`},
	{name: "go-test", needs: "go", setup: `
printf 'module demo\n\ngo 1.26\n' > go.mod
printf 'package demo\n\nfunc Add(a, b int) int { return a + b + 1 }\n' > demo.go
printf 'package demo\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Errorf("Add(2, 2) = %%d, want 4", got)\n\t}\n}\n\nfunc TestOK(t *testing.T) {}\n' > demo_test.go
`, cmd: `go test ./...`},
	{name: "go-build-x", needs: "go", setup: `
printf 'module demo\n\ngo 1.26\n' > go.mod
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hi") }\n' > main.go
mkdir -p bad && printf 'package bad\n\nfunc F() int { return "x" }\n' > bad/bad.go
`, cmd: `go build -x -o /dev/null . && go build ./bad`},
	{name: "gcc", needs: "gcc", setup: `
cat > demo.c <<'R'
#include <stdio.h>
int main(void) {
    int unused;
    printf("%d\n", "not a number");
    return undefined_name;
}
R
`, cmd: `gcc -Wall -c demo.c -o demo.o`},
	{name: "tsc", needs: "npm", setup: `
npm install --cache "$HOME/.cache/ptyhub-corpus-npm" --no-fund --no-audit -q typescript@5.6.3 >/dev/null 2>&1
cat > demo.ts <<'R'
const count: number = "three";
function greet(name: string) { return "hi " + name; }
greet(42);
R
`, cmd: `./node_modules/.bin/tsc --noEmit demo.ts`},
}

// A mode is how a tool's output is recorded.
type mode struct {
	name string
	tty  bool
	env  []string
}

// The agent profile's variables other than TERM and NO_COLOR, in every mode.
var common = []string{"PAGER=cat", "GIT_PAGER=cat", "LANG=C.UTF-8", "LC_ALL=", "DEBIAN_FRONTEND=noninteractive"}

var modes = []mode{
	// The agent profile (session/env.go): TERM, NO_COLOR and CARGO_TERM_PROGRESS_WHEN.
	{name: "tty", tty: true, env: []string{"TERM=xterm-256color", "NO_COLOR=1", "CARGO_TERM_PROGRESS_WHEN=never"}},
	// The choices measured against it: colour on, and NO_COLOR=1 alone.
	{name: "tty-color", tty: true, env: []string{"TERM=xterm-256color"}},
	{name: "tty-nocolor", tty: true, env: []string{"TERM=xterm-256color", "NO_COLOR=1"}},
	{name: "pipe", env: []string{"TERM=dumb", "NO_COLOR=1"}},
}

func main() {
	dir := flag.String("dir", "testdata/corpus", "corpus `directory`")
	only := flag.String("modes", "", "comma-separated `modes` to record (default: all)")
	flag.Parse()
	want := map[string]bool{}
	for _, a := range flag.Args() {
		want[a] = true
	}
	failed := false
	for _, t := range tools {
		if len(want) > 0 && !want[t.name] {
			continue
		}
		if _, err := exec.LookPath(t.needs); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %s is not installed: not recorded\n", t.name, t.needs)
			failed = true
			continue
		}
		if err := recordTool(*dir, t, *only); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", t.name, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func recordTool(dir string, t tool, only string) error {
	out := filepath.Join(dir, t.name)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "cmd"), []byte(t.cmd+"\n"), 0o644); err != nil {
		return err
	}
	for _, m := range modes {
		if only != "" && !strings.Contains(","+only+",", ","+m.name+",") {
			continue
		}
		raw, code, err := run(t, m)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if err := os.WriteFile(filepath.Join(out, m.name+".raw"), raw, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, m.name+".exit"), []byte(strconv.Itoa(code)+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Printf("%s/%s: %d bytes, exit %d\n", t.name, m.name, len(raw), code)
	}
	return nil
}

// run sets up a fresh directory for t and runs its command in mode m, returning the raw
// output and the exit code.
func run(t tool, m mode) ([]byte, int, error) {
	work, err := os.MkdirTemp("", "corpus-"+t.name+"-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(work)
	if t.setup != "" {
		setup := exec.Command("bash", "-ec", t.setup)
		setup.Dir = work
		if b, err := setup.CombinedOutput(); err != nil {
			return nil, 0, fmt.Errorf("setup: %v: %s", err, b)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "TERM" && k != "NO_COLOR" && k != "CI" && !strings.HasPrefix(k, "CARGO_TERM_") {
			env = append(env, kv)
		}
	}
	env = append(env, common...)
	if strings.Contains(t.cmd, "$PORT") {
		srvDir := filepath.Join(work, "srv")
		if err := os.MkdirAll(srvDir, 0o755); err != nil {
			return nil, 0, err
		}
		port, stop, err := serve(srvDir)
		if err != nil {
			return nil, 0, err
		}
		defer stop()
		env = append(env, "PORT="+strconv.Itoa(port))
	}
	env = append(env, m.env...)
	cmd := exec.Command("bash", "-c", t.cmd)
	cmd.Dir = work
	cmd.Env = env
	var raw []byte
	if m.tty {
		f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
		if err != nil {
			return nil, 0, err
		}
		raw, _ = io.ReadAll(f) // ends with EIO once every holder of the terminal is gone
		f.Close()
	} else {
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		cmd.Stdin = nil
		if err := cmd.Start(); err != nil {
			return nil, 0, err
		}
		err := cmd.Wait()
		return buf.Bytes(), exitCode(err), nil
	}
	return raw, exitCode(cmd.Wait()), nil
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// serve starts python3's http.server on 127.0.0.1 in dir and returns its port and a
// function that stops it.
func serve(dir string) (int, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := exec.Command("python3", "-m", "http.server", "-b", "127.0.0.1", "-d", dir, strconv.Itoa(port))
	if err := srv.Start(); err != nil {
		return 0, nil, err
	}
	stop := func() { srv.Process.Kill(); srv.Wait() }
	for range 600 {
		if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
			c.Close()
			return port, stop, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return 0, nil, fmt.Errorf("http.server on port %d did not start", port)
}
