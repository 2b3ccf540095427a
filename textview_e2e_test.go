package ptyhub_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// cargoWorkspace writes three crates under dir: two libraries, one with a build script
// that takes two seconds (so cargo draws its progress bar, whatever the machine's
// speed), and a program with a warning. It returns the program's directory.
func cargoWorkspace(t *testing.T, dir string) string {
	t.Helper()
	files := map[string]string{
		"parse/Cargo.toml":  "[package]\nname = \"parse\"\nversion = \"0.1.0\"\nedition = \"2021\"\nbuild = \"build.rs\"\n",
		"parse/build.rs":    "fn main() { std::thread::sleep(std::time::Duration::from_secs(2)); }\n",
		"parse/src/lib.rs":  "pub fn parse(s: &str) -> Vec<u32> { s.split(',').map(|w| w.trim().parse().unwrap_or(0)).collect() }\n",
		"render/Cargo.toml": "[package]\nname = \"render\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
		"render/src/lib.rs": "pub fn render(v: &[u32]) -> String { v.iter().map(|x| format!(\"{x};\")).collect() }\n",
		"app/Cargo.toml": "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n" +
			"parse = { path = \"../parse\" }\nrender = { path = \"../render\" }\n",
		"app/src/main.rs": "fn main() {\n    let mut unused = 1;\n    println!(\"{}\", render::render(&parse::parse(\"1, 2\")));\n    let _ = unused;\n}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "app")
}

// checkCargoText fails unless out, the text view of cargo building cargoWorkspace,
// holds cargo's warning and summary lines intact, with nothing of its progress bar.
func checkCargoText(t *testing.T, how, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, want := range []string{
		"warning: variable does not need to be mutable",
		" --> src/main.rs:2:9",
		`warning: ` + "`app`" + ` (bin "app") generated 1 warning (run ` + "`cargo fix --bin \"app\" -p app`" + ` to apply 1 suggestion)`,
	} {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("%s: no line %q in:\n%s", how, want, out)
		}
	}
	if strings.Contains(out, "Building [") || !strings.Contains(out, "    Finished `dev` profile") {
		t.Errorf("%s: a progress bar's remains or no summary in:\n%s", how, out)
	}
}

// TestCargoWarningsIntact: cargo's warnings reach the agent (exec_command's path, the
// session client) and `ptyhub exec` intact under the agent profile. Under NO_COLOR
// alone cargo draws its progress bar but cannot erase it, and a warning printed over
// the bar read "warning: variable does not need to be mutable2/4: parse(build)".
func TestCargoWarningsIntact(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "cargo")
	t.Run("exec_command", func(t *testing.T) {
		t.Parallel()
		app := cargoWorkspace(t, t.TempDir())
		_, c := newClient(t, session.Options{})
		r := exec(t, c, session.ExecRequest{Cmd: "cargo build --offline", Workdir: app, YieldTimeMs: new(int64(600000))})
		out, r := untilExit(t, c, r)
		if r.ExitCode == nil || *r.ExitCode != 0 {
			t.Fatalf("cargo build: %+v\n%s", r, out)
		}
		checkCargoText(t, "exec_command", out)
	})
	t.Run("ptyhub exec", func(t *testing.T) {
		t.Parallel()
		h := svNew(t)
		app := cargoWorkspace(t, h.dir)
		out := h.inDir(app).ok("exec", "--yield", "10m", "--", "cargo", "build", "--offline")
		checkCargoText(t, "ptyhub exec", out)
	})
}
