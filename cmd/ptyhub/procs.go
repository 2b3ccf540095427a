package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/ptyhub/ptyhub/internal/schedslice"
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
	hostingSlice()
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(max(4, 2*runtime.GOMAXPROCS(0)))
}

// hostSlice is the time slice of the threads of a process that hosts sessions.
const hostSlice = 3 * time.Millisecond

// hostingSlice gives every thread of a process that hosts sessions (ptyhub serve, ptyhub
// mcp) a time slice of hostSlice in Linux's fair scheduler, against the kernel's default
// of 1.4 ms on 2 CPUs (schedslice; kernels before 6.12 ignore it). Threads the process
// makes later inherit it; the programs of its sessions do not (the reaper gives its
// spawning thread the default back), but other programs it runs (ssh, docker for a
// host) do.
//
// Why: in a flood the session's reader and the program writing into the pty take turns
// on the CPUs, and each read that makes room wakes the writer. With a longer slice
// ptyhub's threads have later deadlines: the program's writes go on while they wait a
// little longer for a CPU, and each read finds the pty fuller (fewer reads, fewer
// wakes). Measured on 2 CPUs under load 11-14 (1 GiB flood through ptyhub mcp, two
// alternated pairs): 21.6 and 22.4 s against 40.3 and 36.3 s, process CPU 7.4 and
// 8.2 s/GiB against 11.7 and 9.9, read system calls 273k and 271k against 345k and
// 346k. On a quiet machine (load under 3, three pairs) the flood is the same within
// 2% (16.9-17.7 s, 11.1-11.7 s/GiB of CPU), with 10-15% fewer voluntary context
// switches: the gain is under load. The cost: on a busy machine a woken ptyhub thread
// preempts another task less readily. A REPL turn through ptyhub mcp measured the same within noise (medians
// +0.54-0.67 ms over the floor against +0.52-1.13, three alternated pairs at load
// 11-13); with a 20 ms slice it was 0.05-0.25 ms slower, so the slice is short.
func hostingSlice() {
	schedslice.SetProcess(hostSlice)
}

// gcHeadroom is the least the heap of a hosting process grows between two collections
// (see hostingGC).
const gcHeadroom = 8 << 20

// hostingGC lets the heap of a process that hosts sessions grow by at least gcHeadroom
// between two collections, and by its live size once that is larger (GOGC=100's own
// rule), unless $GOGC says otherwise. It sets the GC percentage now and again after each
// collection, from a cleanup the runtime runs once per cycle (tuneGC).
//
// Why: with GOGC=100 a small heap (about 1 MiB live in ptyhub mcp with a few sessions)
// is collected every 3 MiB allocated, about every 40-90 exec_command calls, and a
// collection on the hosting process's 4 Ps cost the exec it fell in 5-10 ms of CPU and
// 30-60 more context switches (its mark workers' threads woken on two CPUs beside the
// program): in a run of 200 execs the slowest few. The cost: up to ~5 MiB more heap
// between collections while the live heap is under gcHeadroom; none above it.
func hostingGC() {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	tuneGC(0)
}

// gcTick is the object whose cleanup runs tuneGC after a collection. It holds a pointer
// so that it is never one of the tiny allocator's blocks (whose cleanups may never run).
type gcTick struct{ _ *byte }

var (
	// liveHeap reads the live heap of the last collection.
	liveHeap = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	// gcPercent is the percentage last set; tuneGC's alone (one call at a time: the
	// first from hostingGC, each next from the cleanup the previous one registered).
	gcPercent = 100
)

// tuneGC sets the GC percentage for the live heap of the last collection
// (gcPercentFor) and registers itself to run again after the next one. The argument is
// unused (AddCleanup's).
func tuneGC(int) {
	metrics.Read(liveHeap)
	if v := liveHeap[0].Value; v.Kind() == metrics.KindUint64 {
		if p := gcPercentFor(v.Uint64(), gcHeadroom); p != gcPercent {
			debug.SetGCPercent(p)
			gcPercent = p
		}
	}
	runtime.AddCleanup(new(gcTick), tuneGC, 0)
}

// gcPercentFor returns the smallest GC percentage, at least 100, whose heap goal for a
// live heap of live bytes is at least live + max(live, headroom). The runtime's goal is
// the larger of the live heap grown by the percentage and its heap minimum, 4 MiB scaled
// by the percentage; either reaching the target is enough.
func gcPercentFor(live, headroom uint64) int {
	const heapMinimum = 4 << 20
	target := live + max(live, headroom)
	p := (100*target + heapMinimum - 1) / heapMinimum // the heap minimum reaches target
	if live > 0 {
		p = min(p, (100*(target-live)+live-1)/live) // the grown live heap reaches it
	}
	return int(min(max(p, 100), math.MaxInt32))
}
