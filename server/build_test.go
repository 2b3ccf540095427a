package server

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goToolBuildID is the build ID `go tool buildid` reads from the file at path.
func goToolBuildID(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("go", "tool", "buildid", path).Output()
	if err != nil {
		t.Fatalf("go tool buildid %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

// goBuildID reads the same build ID as the go command from ELF executables of both
// classes and byte orders, linked internally and (with cgo, when a C compiler is there)
// externally, and nothing from a file that is not one.
func TestGoBuildID(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type build struct{ goos, goarch, cgo, ldflags string }
	builds := []build{
		{"linux", "amd64", "0", ""}, // ELF64, little-endian
		{"linux", "386", "0", ""},   // ELF32, little-endian
		{"linux", "s390x", "0", ""}, // ELF64, big-endian
	}
	if _, err := exec.LookPath("gcc"); err == nil {
		builds = append(builds, build{"", "", "1", "-linkmode=external"})
	}
	for _, b := range builds {
		out := filepath.Join(dir, "bin-"+b.goos+"-"+b.goarch+"-"+b.cgo)
		cmd := exec.Command("go", "build", "-o", out, "-ldflags="+b.ldflags, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED="+b.cgo)
		if b.goos != "" {
			cmd.Env = append(cmd.Env, "GOOS="+b.goos, "GOARCH="+b.goarch)
		}
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: go build: %v\n%s", b, err, msg)
		}
		want := goToolBuildID(t, out)
		if got := goBuildID(out); got != want || got == "" {
			t.Errorf("%v: goBuildID %q, go tool buildid %q", b, got, want)
		}
	}
	// This test binary, as the server reads its own.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := goBuildID(self), goToolBuildID(t, self); got != want {
		t.Errorf("test binary: goBuildID %q, go tool buildid %q", got, want)
	}
	// Not an executable, or none at all.
	if got := goBuildID(src); got != "" {
		t.Errorf("a Go source file: goBuildID %q", got)
	}
	if got := goBuildID(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("a missing file: goBuildID %q", got)
	}
}

// A truncated or corrupt ELF file yields no build ID and no panic.
func FuzzNoteBuildID(f *testing.F) {
	self, err := os.Executable()
	if err != nil {
		f.Fatal(err)
	}
	fh, err := os.Open(self)
	if err != nil {
		f.Fatal(err)
	}
	head := make([]byte, headSize)
	n, _ := fh.ReadAt(head, 0)
	fh.Close()
	f.Add(head[:n])
	f.Add(head[:64])
	f.Add([]byte("\x7fELF\x01\x02\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		noteBuildID(bytes.NewReader(b), b)
	})
}
