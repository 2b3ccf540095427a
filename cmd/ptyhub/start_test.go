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

// The commands that only print, or ask this machine's server one question and print the
// answer, run without the signal handling (two threads and ~20 page faults at every
// start); every other command, and any command for another host, keeps it.
func TestNeedsSignals(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"version"}, {"--version"}, {"-version"}, {"help"}, {"help", "exec"}, {"-h"}, {"--help"},
		{"ls"}, {"ls", "--json"}, {"status"}, {"screen", "3"}} {
		if needsSignals(args, "") {
			t.Errorf("needsSignals(%q) = true, want false", args)
		}
	}
	for _, args := range [][]string{{"exec", "--", "version"}, {"serve"}, {"mcp"}, {"--host", "h", "version"}, {"--host", "h", "ls"},
		{"attach", "help"}, {"wait"}, {"read", "3"}, {"logs", "3"}, {"write", "3", "ls"}, {"shell"}, {"dial-stdio"}, {"kill", "3"}, {"bogus"}} {
		if !needsSignals(args, "") {
			t.Errorf("needsSignals(%q) = false, want true", args)
		}
	}
	for _, args := range [][]string{{"ls", "--host", "h"}, {"ls", "--host=h"}, {"status", "-host", "h"}, {"screen", "3", "--host", "h"}} {
		if !needsSignals(args, "") {
			t.Errorf("needsSignals(%q) = false, want true", args)
		}
	}
	if !needsSignals([]string{"ls"}, "ssh://h") {
		t.Errorf("needsSignals(ls) with $PTYHUB_HOST = false, want true")
	}
	if needsSignals([]string{"version"}, "ssh://h") {
		t.Errorf("needsSignals(version) with $PTYHUB_HOST = true, want false")
	}
	// And they still print.
	if r := ptyhub(t, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "ptyhub ") {
		t.Errorf("ptyhub version: %+v", r)
	}
	if r := ptyhub(t, "help", "ls"); r.code != 0 || !strings.Contains(r.stdout, "ptyhub ls") {
		t.Errorf("ptyhub help ls: %+v", r)
	}
}
