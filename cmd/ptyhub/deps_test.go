package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Every package linked into ptyhub runs its init at every start of every command
// (`ptyhub version`, `ptyhub ls`), so a package that only a rare path needs costs every
// call. These are known such packages: they must stay out of the binary.
func TestLinksNoRarePathPackages(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, p := range []string{
		"debug/elf",     // reading the build ID note needs no section table
		"debug/dwarf",   // with debug/elf
		"internal/zstd", // with debug/elf
	} {
		if slices.Contains(deps, p) {
			t.Errorf("ptyhub links %s; see who imports it: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/ptyhub", p)
		}
	}
}
