package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// idleSessions starts count idle sessions (`sleep 3600`) through MCP and reports what
// each costs the processes that hold them (the manager and its reaper: the server, or
// `ptyhub mcp` itself with --embedded), and exec_command latency of /bin/true with them
// alive against the same call on control, a second `ptyhub mcp` with no sessions,
// interleaved sample by sample (so the machine's drift over the minutes the sessions
// take to start hits both alike). managerPid finds the manager's pid once it runs. The
// sessions are removed at the end.
func idleSessions(count, samples int, managerPid func() int, call, control func(string, map[string]any) (map[string]any, error)) (figure, error) {
	execTrue := func(call func(string, map[string]any) (map[string]any, error)) (time.Duration, error) {
		t0 := time.Now()
		r, err := call("exec_command", map[string]any{"argv": []string{"/bin/true"}})
		el := time.Since(t0)
		if err != nil {
			return 0, err
		}
		call("kill_session", map[string]any{"session_id": r["session_id"], "remove": true})
		return el, nil
	}
	pid := managerPid()
	if pid <= 0 {
		return figure{}, fmt.Errorf("idle sessions: cannot find the manager's pid")
	}
	rss0 := treeRSS(pid)
	var ids []any
	defer func() {
		for _, id := range ids {
			call("kill_session", map[string]any{"session_id": id, "remove": true})
		}
	}()
	for range count {
		r, err := call("exec_command", map[string]any{"argv": []string{"sleep", "3600"}, "yield_time_ms": 0})
		if err != nil {
			return figure{}, fmt.Errorf("idle session %d: %w", len(ids)+1, err)
		}
		ids = append(ids, r["session_id"])
	}
	rss1 := treeRSS(pid)
	var empty, busy []time.Duration
	for i := 0; i < samples+5; i++ {
		e, err := execTrue(control)
		if err != nil {
			return figure{}, fmt.Errorf("control: %w", err)
		}
		b, err := execTrue(call)
		if err != nil {
			return figure{}, err
		}
		if i >= 5 {
			empty, busy = append(empty, e), append(busy, b)
		}
	}
	per := float64(rss1-rss0) / 1024 / float64(count)
	return figure{
		name:      fmt.Sprintf("exec_command `/bin/true` with %d idle sessions alive", count),
		floorName: "the same through a second `ptyhub mcp` with none, interleaved",
		floor:     empty, prod: busy,
		note:   fmt.Sprintf("manager + reaper RSS %.1f KiB per idle session (%d → %d MiB)", per, rss0>>20, rss1>>20),
		target: "≤ 24 KiB a session, exec within ±5%",
		met: func(f figure) bool {
			r := float64(med(f.prod)) / float64(med(f.floor))
			return per <= 24 && r >= 0.95 && r <= 1.05
		},
	}, nil
}

// treeRSS is the resident memory of pid and of its direct children that are ptyhub
// processes (the reaper), not the sessions' programs. A child is listed in the children
// file of the thread that forked it, so every thread's is read: the reaper is started
// from whichever thread ran the first session's start.
func treeRSS(pid int) int64 {
	total := procRSS(pid)
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	seen := map[int]bool{}
	for _, t := range tasks {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, f := range strings.Fields(string(kids)) {
			k, _ := strconv.Atoi(f)
			if seen[k] {
				continue
			}
			seen[k] = true
			if e, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", k)); e == exe {
				total += procRSS(k)
			}
		}
	}
	return total
}

func procRSS(pid int) int64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range bytes.SplitSeq(st, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			if f := bytes.Fields(v); len(f) > 0 {
				kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
