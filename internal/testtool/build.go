package testtool

import "os/exec"

// GoBuild returns a `go build -o out pkg` command with this test binary's build tags, so
// the portable suite's end-to-end tests run a ptyhub built for the portable paths too.
// The command is not started.
func GoBuild(out, pkg string) *exec.Cmd {
	args := []string{"build", "-o", out}
	if Portable {
		args = append(args, "-tags", "ptyhub_portable")
	}
	return exec.Command("go", append(args, pkg)...)
}
