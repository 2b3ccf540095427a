package ptyhub_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// procsWithEnv lists the live (not zombie) processes whose environment holds the entry
// kv ("KEY=value"): how the end-to-end tests find what a session or a test started.
func procsWithEnv(kv string) []int {
	want := []byte(kv + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, want) && !isZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// isZombie reports whether pid is a zombie (or gone).
func isZombie(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(st, ')')
	return i > 0 && len(st) > i+2 && st[i+2] == 'Z'
}
