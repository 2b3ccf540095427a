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

// The commands that only print run without the signal handling (two threads and ~20
// page faults at every start); every other command, and any command after the global
// --host, keeps it.
func TestPrintsOnly(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"version"}, {"--version"}, {"-version"}, {"help"}, {"help", "exec"}, {"-h"}, {"--help"}} {
		if !printsOnly(args) {
			t.Errorf("printsOnly(%q) = false, want true", args)
		}
	}
	for _, args := range [][]string{{"ls"}, {"exec", "--", "version"}, {"serve"}, {"mcp"}, {"--host", "h", "version"}, {"attach", "help"}, {"bogus"}} {
		if printsOnly(args) {
			t.Errorf("printsOnly(%q) = true, want false", args)
		}
	}
	// And they still print.
	if r := ptyhub(t, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "ptyhub ") {
		t.Errorf("ptyhub version: %+v", r)
	}
	if r := ptyhub(t, "help", "ls"); r.code != 0 || !strings.Contains(r.stdout, "ptyhub ls") {
		t.Errorf("ptyhub help ls: %+v", r)
	}
}
