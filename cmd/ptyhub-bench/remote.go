package main

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/ptyhub/ptyhub/remote"
)

// remoteTurn measures the REPL turn on host (an ssh:// URL, reached with $PTYHUB_SSH as
// ptyhub reaches it) through ptyhub mcp's exec_command {host}, against the floor of the
// same turn over a bare ssh to that host in the same run: `ssh … -- python3 -qui`,
// write `1+1\n`, read until `2\n`.
func remoteTurn(n int, host string, call func(string, map[string]any) (map[string]any, error)) (figure, error) {
	f := figure{name: "write_stdin `1+1\\n` to python3 -q on " + host + ", wait_for `>>> `",
		floorName: "the same turn over a bare `ssh HOST -- python3 -qui` (write, read until `2\\n`)"}
	t, err := remote.Resolve(host, nil)
	if err != nil {
		return f, err
	}
	// The transport's argv ends with `-- ptyhub dial-stdio`: run python instead.
	argv := append(append([]string(nil), t.Argv[:len(t.Argv)-2]...), "python3", "-qui")
	py := exec.Command(argv[0], argv[1:]...)
	in, err := py.StdinPipe()
	if err != nil {
		return f, err
	}
	out, err := py.StdoutPipe()
	if err != nil {
		return f, err
	}
	if err := py.Start(); err != nil {
		return f, fmt.Errorf("bare ssh: %w", err)
	}
	defer func() { in.Close(); py.Process.Kill(); py.Wait() }()
	buf := make([]byte, 4096)
	readTwo := func() error {
		var acc []byte
		for !bytes.HasSuffix(acc, []byte("2\n")) {
			k, err := out.Read(buf)
			if err != nil {
				if err == io.EOF {
					err = fmt.Errorf("bare ssh ended: %w", err)
				}
				return err
			}
			acc = append(acc, buf[:k]...)
		}
		return nil
	}
	r, err := call("exec_command", map[string]any{"host": host, "argv": []string{"python3", "-q"}, "wait_for": ">>> $"})
	if err != nil {
		return f, err
	}
	id := r["session_id"]
	defer call("kill_session", map[string]any{"session_id": id, "remove": true})
	for i := 0; i < n+10; i++ {
		t0 := time.Now()
		if _, err := io.WriteString(in, "1+1\n"); err != nil {
			return f, err
		}
		if err := readTwo(); err != nil {
			return f, err
		}
		fl := time.Since(t0)
		t0 = time.Now()
		r, err := call("write_stdin", map[string]any{"session_id": id, "chars": "1+1\n", "wait_for": ">>> $", "yield_time_ms": 10000})
		pr := time.Since(t0)
		if err != nil {
			return f, err
		}
		if r["returned_because"] != "pattern" {
			return f, fmt.Errorf("remote turn returned because %v: %v", r["returned_because"], r)
		}
		if i >= 10 {
			f.floor, f.prod = append(f.floor, fl), append(f.prod, pr)
		}
	}
	f.note = "one ssh connection each, kept open; the turn crosses it once each way"
	return f, nil
}
