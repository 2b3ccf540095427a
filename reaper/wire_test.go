package reaper

import (
	"net"
	"os"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// wirePair is a connected pair of the manager's socket type (see socketPair).
func wirePair(t *testing.T) (a, b *net.UnixConn) {
	t.Helper()
	fds, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "wire")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// Every field of a message arrives as sent, with the descriptors on it, for a message in
// one packet and for one split over several (an environment larger than a packet).
func TestWireRoundTrip(t *testing.T) {
	a, b := wirePair(t)
	big := make([]string, 0, 3000)
	for i := range 3000 {
		big = append(big, "VAR_"+strings.Repeat("x", i%40)+"=välue\x01 \"quoted\"")
	}
	msgs := []*msg{
		{ID: 1 << 40, Op: opSpawn, Path: "/bin/true", Argv: []string{"true", "", "a b"}, Env: []string{"A=1", "", "PTYHUB_SESSION=u"},
			Dir: "/tmp/dir ü", Ctty: true, Tag: "0190f5c2-0000-7000-8000-000000000000", Hold: true},
		{ID: 2, Op: opReply, Pid: 4194304, Spawner: 77, Status: -1, Errno: 2, Err: "exec: no such file"},
		{ID: 3, Op: opKill, Tag: "t", Sig: 9, Wait: true, GraceMs: 2000},
		{Op: opExit, Pid: 12, Tag: "t", Status: 0x0f00, Survivors: []Survivor{{PID: 13, Command: "sleep 99"}, {PID: 14}}},
		{ID: 5, Op: opSpawn, Path: "/bin/env", Argv: []string{"env"}, Env: big, Tag: "big"},
		{Op: opShutdown},
	}
	var buf []byte
	for _, m := range msgs {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := send(a, &buf, m, []int{int(r.Fd()), int(w.Fd())}); err != nil {
			t.Fatal(err)
		}
		r.Close()
		w.Close()
		got, fds, err := recv(b, make([]byte, maxPacket), make([]byte, unix.CmsgSpace(4*8)))
		if err != nil {
			t.Fatalf("%s: %v", m.Op, err)
		}
		closeAll(fds)
		if len(fds) != 2 {
			t.Errorf("%s: %d descriptors arrived, want 2", m.Op, len(fds))
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%s: sent\n%+v\ngot\n%+v", m.Op, m, got)
		}
	}
}

// A message that does not decode is an error, never a message with fields made up.
func TestWireMalformed(t *testing.T) {
	good := appendMsg(nil, &msg{ID: 7, Op: opSpawn, Argv: []string{"a", "bc"}, Tag: "t"})
	if _, err := parseMsg(good); err != nil {
		t.Fatal(err)
	}
	for n := 1; n < len(good); n++ {
		if m, err := parseMsg(good[:n]); err == nil && reflect.DeepEqual(m, &msg{ID: 7, Op: opSpawn, Argv: []string{"a", "bc"}, Tag: "t"}) {
			t.Errorf("a message cut to %d of %d bytes decoded whole", n, len(good))
		}
	}
	for _, bad := range [][]byte{{0xff}, {fOp, 200}, {fArgv, 3, 1, 'a'}, {fSurvivors, 0xff, 0xff, 0xff, 0xff, 0x0f}} {
		if m, err := parseMsg(bad); err == nil {
			t.Errorf("%q decoded as %+v", bad, m)
		}
	}
}

// A spawn is encoded into a buffer the sender keeps and decoded with one string for all
// its arguments and variables: a round trip's allocations do not grow with the
// environment.
func TestWireSendReusesBuffer(t *testing.T) {
	a, b := wirePair(t)
	var buf []byte
	rbuf := make([]byte, maxPacket)
	oob := make([]byte, unix.CmsgSpace(4*8))
	allocs := func(vars int) float64 {
		env := make([]string, vars)
		for i := range env {
			env[i] = "VAR_" + strings.Repeat("v", i%30) + "=value"
		}
		m := &msg{ID: 9, Op: opSpawn, Path: "/bin/true", Argv: []string{"true"}, Env: env, Dir: "/", Ctty: true, Tag: "t", Hold: true}
		return testing.AllocsPerRun(20, func() {
			if err := send(a, &buf, m, nil); err != nil {
				t.Fatal(err)
			}
			if _, _, err := recv(b, rbuf, oob); err != nil {
				t.Fatal(err)
			}
		})
	}
	few, many := allocs(10), allocs(400)
	// recv makes the message, one string of its lists, the two lists, and its reading.
	if few > 8 || many != few {
		t.Errorf("a spawn's round trip allocates %.0f times with 10 variables, %.0f with 400; want the same, at most 8", few, many)
	}
}
