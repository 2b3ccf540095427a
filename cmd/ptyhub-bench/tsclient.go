package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// tsDriver is the TypeScript client's driver, relative to the repository's root (where
// `go run ./cmd/ptyhub-bench` runs); its SDK is installed by `npm ci` in its directory.
const tsDriver = "testdata/mcpclient/bench.mjs"

// tsTurns measures the REPL turn through the official TypeScript MCP SDK (what
// Claude Code-style clients use): node times each callTool of write_stdin with wait_for
// on its own `ptyhub mcp` (started with env), interleaved turn by turn with the bare pty
// turn. The first 10 pairs are warm-up.
func tsTurns(n int, bin string, env []string, turnFloor func() (time.Duration, error)) (floor, prod []time.Duration, err error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, nil, errors.New("node not installed")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(tsDriver), "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		return nil, nil, fmt.Errorf("the TypeScript SDK is not installed (run npm ci in %s)", filepath.Dir(tsDriver))
	}
	cmd := exec.Command(node, tsDriver, bin, python)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	defer func() {
		in.Close() // the driver removes its session and exits
		if werr := cmd.Wait(); werr != nil && err == nil {
			err = fmt.Errorf("node %s: %w", tsDriver, werr)
		}
	}()
	sc := bufio.NewScanner(out)
	var line struct {
		Ready bool    `json:"ready"`
		Error string  `json:"error"`
		MS    float64 `json:"ms"`
		OK    bool    `json:"ok"`
	}
	next := func() error {
		if !sc.Scan() {
			if sc.Err() != nil {
				return sc.Err()
			}
			return io.ErrUnexpectedEOF
		}
		line.Ready, line.Error, line.MS, line.OK = false, "", 0, false
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("bad line %q", sc.Text())
		}
		if line.Error != "" {
			return errors.New(line.Error)
		}
		return nil
	}
	if err := next(); err != nil || !line.Ready {
		return nil, nil, fmt.Errorf("node %s did not start: %v", tsDriver, err)
	}
	for i := 0; i < n+10; i++ {
		fl, err := turnFloor()
		if err != nil {
			return nil, nil, err
		}
		if _, err := io.WriteString(in, "turn\n"); err != nil {
			return nil, nil, err
		}
		if err := next(); err != nil {
			return nil, nil, err
		}
		if !line.OK {
			return nil, nil, fmt.Errorf("turn %d did not end at the prompt", i)
		}
		if i >= 10 {
			floor = append(floor, fl)
			prod = append(prod, time.Duration(line.MS*float64(time.Millisecond)))
		}
	}
	return floor, prod, nil
}
