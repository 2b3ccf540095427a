package session

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// liveHeap returns the heap bytes still reachable after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// countFDs counts this process's open file descriptors.
func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestRemovedSessionsReleaseEverything: sessions that printed output and were removed
// leave nothing behind: the heap, the open files and the goroutines come back to where
// they were after the first few, and no spill file is left on disk.
func TestRemovedSessionsReleaseEverything(t *testing.T) {
	dir := t.TempDir()
	m, err := NewManager(Options{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	ctx := context.Background()
	y := int64(60_000)
	run := func(n int) {
		for range n {
			r, err := c.Exec(ctx, ExecRequest{Argv: []string{"seq", "20000"}, YieldTimeMs: &y})
			if err != nil {
				t.Fatal(err)
			}
			if r.State != StateExited || r.NextOffset < 100_000 {
				t.Fatalf("exec: state %s, %d bytes", r.State, r.NextOffset)
			}
			if _, err := c.Kill(ctx, KillRequest{SessionID: r.SessionID, Remove: true}); err != nil {
				t.Fatal(err)
			}
		}
		m.releasing.Wait()
	}
	run(20)
	heap0, fds0, gor0 := liveHeap(), countFDs(t), runtime.NumGoroutine()
	run(100)
	heap1, fds1, gor1 := liveHeap(), countFDs(t), runtime.NumGoroutine()
	t.Logf("after 20: heap %d KiB, %d fds, %d goroutines; after 120: heap %d KiB, %d fds, %d goroutines",
		heap0>>10, fds0, gor0, heap1>>10, fds1, gor1)
	// 100 sessions of ~110 KB each: a leak of their rings alone would be ~12 MiB.
	if heap1 > heap0+4<<20 {
		t.Errorf("heap grew by %d KiB over 100 removed sessions", (heap1-heap0)>>10)
	}
	if fds1 > fds0+4 {
		t.Errorf("open fds grew from %d to %d", fds0, fds1)
	}
	if gor1 > gor0+8 {
		t.Errorf("goroutines grew from %d to %d", gor0, gor1)
	}
	if n := m.recs.len(); n != 0 {
		t.Errorf("%d recorders still held by the manager", n)
	}
	ents, _ := os.ReadDir(dir + "/sessions")
	spills := 0
	for _, e := range ents {
		if len(e.Name()) > 4 && e.Name()[len(e.Name())-4:] == ".raw" {
			spills++
		}
	}
	if spills != 0 {
		t.Errorf("%d spill files left for removed sessions", spills)
	}
	m.mu.Lock()
	left := len(m.sessions)
	m.mu.Unlock()
	if left != 0 {
		t.Errorf("%s sessions left in the table", strconv.Itoa(left))
	}
}

// TestRunningSessionFDs: a running session whose output fits in memory holds three file
// descriptors in the manager (terminal master, exit watch, transcript); its raw spill is
// created only once the output passes half the ring.
func TestRunningSessionFDs(t *testing.T) {
	testtool.KernelOnly(t, "it counts the pidfd each held session keeps; the portable paths hold none")
	dir := t.TempDir()
	m, err := NewManager(Options{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	ctx := context.Background()
	y := int64(0)
	r, err := c.Exec(ctx, ExecRequest{Argv: []string{"sleep", "1000"}, YieldTimeMs: &y}) // starts the reaper
	if err != nil {
		t.Fatal(err)
	}
	// The exit watch's pidfd is opened by the session's own goroutine after the start
	// returns: wait for it as for the recorder, or a count can miss it.
	pidfds := func() int {
		n := 0
		ents, _ := os.ReadDir("/proc/self/fd")
		for _, e := range ents {
			if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l == "anon_inode:[pidfd]" {
				n++
			}
		}
		return n
	}
	started := 0
	waitRecorder := func(id string) {
		s, err := m.lookup(id)
		if err != nil {
			t.Fatal(err)
		}
		<-s.rec.ready
		started++
		for pidfds() < started {
			time.Sleep(time.Millisecond)
		}
	}
	// Goroutines of the sessions hold short-lived fds at times (the detector's copy of a
	// terminal fd, /proc reads): the lowest of a few counts leaves those out and keeps
	// every fd a session holds for its life.
	steadyFDs := func() int {
		low := countFDs(t)
		for range 10 {
			time.Sleep(2 * time.Millisecond)
			low = min(low, countFDs(t))
		}
		return low
	}
	waitRecorder(r.SessionID)
	before := steadyFDs()
	const n = 20
	for range n {
		r, err := c.Exec(ctx, ExecRequest{Cmd: "echo hello; exec sleep 1000", YieldTimeMs: &y})
		if err != nil {
			t.Fatal(err)
		}
		waitRecorder(r.SessionID)
	}
	per := float64(steadyFDs()-before) / n
	t.Logf("%.2f fds per running session", per)
	if per > 3 {
		t.Errorf("%.2f fds per running session, want 3", per)
	}
	ents, _ := os.ReadDir(dir + "/sessions")
	for _, e := range ents {
		if len(e.Name()) > 4 && e.Name()[len(e.Name())-4:] == ".raw" {
			t.Errorf("spill %s created for a session with little output", e.Name())
		}
	}
}

// TestHistoryBoundedByBytes: ended sessions are history bounded by the output they keep
// in memory too: past Options.KeepExitedBytes the oldest are forgotten, silently.
func TestHistoryBoundedByBytes(t *testing.T) {
	m, err := NewManager(Options{StateDir: t.TempDir(), KeepExitedBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	y := int64(60_000)
	for i := range 5 {
		r, err := c.Exec(context.Background(), ExecRequest{Argv: []string{"seq", "100000"}, YieldTimeMs: &y})
		if err != nil {
			t.Fatal(err)
		}
		if r.State != StateExited || len(r.Warnings) != 0 {
			t.Fatalf("exec %d: %s, warnings %q", i, r.State, r.Warnings)
		}
	}
	m.releasing.Wait()
	l, _ := c.List(context.Background())
	var held int64
	for _, s := range l.Sessions {
		held += s.OutputSize
	}
	// The newest ended session before the last start (589 KB) and the last one.
	if len(l.Sessions) != 2 || held > 2<<20 {
		t.Errorf("%d ended sessions kept, %d bytes of output: want 2", len(l.Sessions), held)
	}
}

// TestIdleSessionGoroutines: a session that printed, had a terminal query answered and
// input typed, and now waits, keeps one goroutine: its reader. The transcript recorder,
// the writer, the query answerer and its exit path run only while they have work, and
// end once it is done; the exits of held leaders are watched by one goroutine for the
// process.
func TestIdleSessionGoroutines(t *testing.T) {
	m, err := NewManager(Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	ctx := context.Background()
	y := int64(30_000)
	start := func() {
		r, err := c.Exec(ctx, ExecRequest{Cmd: `printf 'ready\033[5n\n'; read -r x; echo "got $x"; exec sleep 1000`, WaitFor: "ready", YieldTimeMs: &y})
		if err != nil || r.ReturnedBecause != BecausePattern {
			t.Fatalf("exec: %v %+v", err, r)
		}
		// The query's answer and the typed line are read: the answerer and the writer
		// both ran.
		r, err = c.Write(ctx, WriteRequest{SessionID: r.SessionID, Chars: "typed\n", WaitFor: `got .*typed`, YieldTimeMs: &y})
		if err != nil || r.ReturnedBecause != BecausePattern {
			t.Fatalf("write: %v %+v", err, r)
		}
	}
	// settled waits until at most want goroutines run: those of the sessions' work end
	// on their own, shortly after the calls returned.
	settled := func(want int) int {
		deadline := time.Now().Add(30 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= want || time.Now().After(deadline) {
				return n
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	start() // starts the reaper, the manager's own goroutines and the watch of held leaders
	g0 := runtime.NumGoroutine()
	const n = 10
	for range n {
		start()
	}
	if g := settled(g0 + n); g > g0+n {
		t.Errorf("%d idle sessions keep %d goroutines, want at most 1 each", n, g-g0)
	}
}

// TestIdleSessionHoldsNoTextLog: a session that has printed nothing holds no text log
// (its converter, digest and path are made at the first output), and one that ends
// without printing still gets its .log and the digest of empty output.
func TestIdleSessionHoldsNoTextLog(t *testing.T) {
	m, err := NewManager(Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("t")
	ctx := context.Background()
	y := int64(0)
	r, err := c.Exec(ctx, ExecRequest{Argv: []string{"sleep", "1000"}, YieldTimeMs: &y})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.lookup(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	// The recorder's first run creates the files and ends once the reader found the
	// terminal quiet; its state is then readable under its mutex.
	for deadline := time.Now().Add(30 * time.Second); ; {
		s.rec.mu.Lock()
		running, made := s.rec.running, s.rec.tl != nil
		s.rec.mu.Unlock()
		if !running {
			if made {
				t.Fatal("a session that printed nothing holds a text log")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recorder of an idle session still runs after 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := c.Kill(ctx, KillRequest{SessionID: r.SessionID}); err != nil {
		t.Fatal(err)
	}
	<-s.rec.done
	if s.rec.tl == nil {
		t.Fatal("no text log once the transcript is finished")
	}
	cp := s.completion(true)
	if cp == nil || cp.LogPath == "" || cp.OutputSHA256 != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" || cp.OutputLines != 0 {
		t.Fatalf("completion of a session that printed nothing: %+v", cp)
	}
	if st, err := os.Stat(cp.LogPath); err != nil || st.Size() != 0 {
		t.Fatalf("log %s: %v %v", cp.LogPath, st, err)
	}
}

// TestSessionStructFitsItsSizeClass: the Session struct, allocated for every session,
// stays within 1408 bytes (and its recorder within 224), the allocator's size class it fits now; the next class is
// 1536 and then 1792, so a few more bytes would cost every idle session 128 more. State
// that an idle session does not use belongs behind a pointer made on first use (as the
// writer's typeahead cache is).
func TestSessionStructFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Session{}); size > 1408 {
		t.Errorf("Session is %d bytes, over the 1408-byte size class", size)
	}
	// The recorder, one per session too: the transcript's header is its first run's
	// argument, not a field kept for the session's life.
	if size := unsafe.Sizeof(recorder{}); size > 224 {
		t.Errorf("recorder is %d bytes, over the 224-byte size class", size)
	}
}
