package main

import (
	"os"
	"runtime"
)

// hostingProcs sets GOMAXPROCS for a process that hosts sessions (ptyhub serve, ptyhub
// mcp) to twice the CPUs Go would use, at least 4, unless $GOMAXPROCS says otherwise.
//
// Why: in a flood, the session's reader must run within ~0.15 ms of data arriving (a
// pty holds ~17 KiB), while the recorder and the collector work on 64 KiB batches. With
// one P per CPU both Ps can be busy with those batches, and the goroutine the netpoller
// readies for the reader waits for one of them to finish; with spare Ps an idle one's
// thread is blocked in the netpoller and runs the reader at once, and the kernel shares
// the CPUs among the threads. Measured on 2 CPUs (1 GiB flood into 10,000 tokens, four
// paired samples each): 78-89% of the bare-pty floor with 2 Ps, 89-94% with 4; the REPL
// turn and exec of /bin/true unchanged within noise.
func hostingProcs() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(max(4, 2*runtime.GOMAXPROCS(0)))
}
