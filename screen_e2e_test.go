package ptyhub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
	"github.com/ptyhub/ptyhub/session"
)

// scScreen reads the screen view of a session.
func scScreen(t *testing.T, c *session.Client, id string) *session.Result {
	t.Helper()
	r, err := c.Read(context.Background(), session.ReadRequest{SessionID: id, View: "screen"})
	if err != nil {
		t.Fatalf("read screen: %v", err)
	}
	if r.Screen == nil {
		t.Fatalf("read screen: no screen in %+v", r)
	}
	return r
}

// scWaitScreen reads the screen until ok accepts it, waiting for new output between
// reads (not for time); it fails after a generous bound.
func scWaitScreen(t *testing.T, c *session.Client, id string, ok func(*session.Screen) bool) *session.Result {
	t.Helper()
	limit := time.Now().Add(20 * time.Second)
	for {
		r := scScreen(t, c, id)
		if ok(r.Screen) {
			return r
		}
		if time.Now().After(limit) {
			t.Fatalf("screen never became as expected:\n%s\n%+v", r.Output, r.Screen)
		}
		// Wait for more output (any visible character), at most a second.
		write(t, c, session.WriteRequest{SessionID: id, YieldTimeMs: new(int64(1000)), WaitFor: "(?s).", MaxOutputTokens: new(int64(50))})
	}
}

// TestScreenQueriesAnswered: programs that really wait for a terminal's answer get it,
// once, also when the query is split across writes.
func TestScreenQueriesAnswered(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	cases := []struct {
		name, cmd, want string
	}{
		{"cpr at start", `printf "\033[6n"; IFS= read -rs -t5 -dR r; echo "[${r#*[}]"`, "[1;1]"},
		{"cpr after output", `printf "ab\r\nxyz"; printf "\033[6n"; IFS= read -rs -t5 -dR r; echo; echo "[${r#*[}]"`, "[2;4]"},
		{"cpr split across writes", `printf "\033[6"; sleep 0.2; printf n; IFS= read -rs -t5 -dR r; echo "[${r#*[}]"`, "[1;1]"},
		{"cpr after cursor move", `printf "\033[7;12H\033[6n"; IFS= read -rs -t5 -dR r; echo; echo "[${r#*[}]"`, "[7;12]"},
		{"status", `printf "\033[5n"; IFS= read -rs -t5 -dn r; echo "[${r#*[}]"`, "[0]"},
		{"da1", `printf "\033[c"; IFS= read -rs -t5 -dc r; echo "[${r#*[}]"`, "[?1;2]"},
		{"da2", `printf "\033[>c"; IFS= read -rs -t5 -dc r; echo "[${r#*[}]"`, "[>1;10;0]"},
		{"osc 11 bel", `printf "\033]11;?\007"; IFS= read -rs -t5 -d $'\a' r; echo "[${r#*]}]"`, "[11;rgb:0000/0000/0000]"},
		{"osc 10 st", `printf "\033]10;?\033\\"; IFS= read -rs -t5 -d '\' r; r=${r#*]}; echo "[${r%?}]"`, "[10;rgb:ffff/ffff/ffff]"},
		// Answered once: a duplicate would arrive ahead of the second answer.
		{"exactly once", `stty -echo; printf "\033[5n"; IFS= read -rs -t5 -dn a; printf "\033[c"; IFS= read -rs -t5 -dc b; printf "\033[6n"; IFS= read -rs -t5 -dR p; echo "[${a#*[}|${b#*[}|${p#*[}]"`, "[0|?1;2|1;1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := exec(t, c, session.ExecRequest{Argv: []string{"bash", "-c", tc.cmd}})
			out, r := untilExit(t, c, r)
			if !strings.Contains(out, tc.want) || r.ExitCode == nil || *r.ExitCode != 0 {
				t.Errorf("output %q (exit %v), want %q", out, r.ExitCode, tc.want)
			}
		})
	}
}

// orderProg, in raw mode, prints three cursor position queries, each after 100 line
// insertions on its 100×100 screen (slow for an emulator to play, ~10 ms each, 20 times
// that under the race detector), then READY, all in one write. It then reads its input
// until it has the three answers (each ending in R) and an x, and says whether the x
// came after them.
const orderProg = `
import os, select, termios, tty
old = termios.tcgetattr(0)
tty.setraw(0)
os.write(1, (b"\x1b[L" * 100 + b"\x1b[6n") * 3 + b"READY\r\n")
got = b""
while (b"x" not in got or got.count(b"R") < 3) and select.select([0], [], [], 30)[0]:
    got += os.read(0, 100)
termios.tcsetattr(0, termios.TCSADRAIN, old)
if b"x" not in got or got.count(b"R") < 3:
    print("ORDER incomplete", repr(got))
elif got.rindex(b"R") < got.index(b"x"):
    print("ORDER answers-first")
else:
    print("ORDER input-first", repr(got))
`

// TestScreenAnswersBeforeLaterInput: input the agent writes after it saw output that
// follows terminal queries reaches the program after the queries' answers, as from a
// terminal, which answers a query as it shows it, before what follows it is on the
// screen. Here the agent sees READY at once, while the answers wait for the emulator to
// play the output before each query.
func TestScreenAnswersBeforeLaterInput(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "python3")
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{Argv: []string{"python3", "-c", orderProg}, Rows: 100, Cols: 100,
		WaitFor: "READY", YieldTimeMs: new(int64(60_000))})
	if r.State == session.StateExited {
		t.Fatalf("the program ended early: %+v", r)
	}
	out, _ := untilExit(t, c, write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "x", YieldTimeMs: new(int64(30_000))}))
	if !strings.Contains(out, "ORDER answers-first") {
		t.Errorf("the input overtook the answers: %q", out)
	}
}

// TestScreenPromptToolkit: prompt_toolkit asks for the cursor position before every
// prompt and warns when it gets no answer.
func TestScreenPromptToolkit(t *testing.T) {
	t.Parallel()
	testtool.NeedPython(t, "prompt_toolkit")
	_, c := newClient(t, session.Options{})
	r := exec(t, c, session.ExecRequest{
		Argv:    []string{"python3", "-c", "from prompt_toolkit import prompt; print('GOT', prompt('PTK> '))"},
		WaitFor: "PTK> ",
		// The call returns at the prompt; the default 10 s is not always enough for
		// python3 to import prompt_toolkit on a loaded 2-core machine.
		YieldTimeMs: new(int64(120_000)),
	})
	if !strings.Contains(r.Output, "PTK>") {
		t.Fatalf("no prompt: %+v", r)
	}
	out, _ := untilExit(t, c, write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: "hi\r"}))
	if !strings.Contains(out, "GOT hi") || strings.Contains(out, "CPR") {
		t.Errorf("output %q", out)
	}
}

// TestScreenFullScreenPrograms reads less, vim and top as the screen a human sees.
func TestScreenFullScreenPrograms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= 100; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	long := filepath.Join(dir, "long.txt")
	short := filepath.Join(dir, "short.txt")
	os.WriteFile(long, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	os.WriteFile(short, []byte("alpha\nbeta\ngamma\n"), 0o600)
	_, c := newClient(t, session.Options{})
	cases := []struct {
		name  string
		argv  []string
		ready func(*session.Screen) bool
		alt   bool
		quit  string
	}{
		{"less", []string{"less", long}, func(s *session.Screen) bool {
			return s.Rows[0] == "line 1" && s.Rows[22] == "line 23" && strings.HasPrefix(s.Rows[23], ":") ||
				s.Rows[0] == "line 1" && strings.Contains(s.Rows[23], "long.txt")
		}, true, "q"},
		{"vim", []string{"vim", "-u", "NONE", "-N", "-n", "-i", "NONE", short}, func(s *session.Screen) bool {
			return s.Rows[0] == "alpha" && s.Rows[2] == "gamma" && s.Rows[3] == "~" && s.Rows[22] == "~" &&
				strings.Contains(s.Rows[23], "short.txt")
		}, true, "\x1b:q!\r"},
		{"top", []string{"top", "-d", "1"}, func(s *session.Screen) bool {
			return strings.HasPrefix(s.Rows[0], "top - ") && strings.HasPrefix(s.Rows[1], "Tasks:") &&
				strings.Contains(strings.Join(s.Rows, "\n"), "PID")
		}, false, "q"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testtool.Need(t, tc.argv[0])
			r := exec(t, c, session.ExecRequest{Argv: tc.argv, YieldTimeMs: new(int64(0))})
			sr := scWaitScreen(t, c, r.SessionID, tc.ready)
			if sr.Screen.AltScreen != tc.alt || len(sr.Screen.Rows) != 24 {
				t.Errorf("alt %v, %d rows; want alt %v", sr.Screen.AltScreen, len(sr.Screen.Rows), tc.alt)
			}
			if want := strings.TrimRight(strings.Join(sr.Screen.Rows, "\n"), "\n"); sr.Output != want {
				t.Errorf("output %q is not the rows joined %q", sr.Output, want)
			}
			untilExit(t, c, write(t, c, session.WriteRequest{SessionID: r.SessionID, Chars: tc.quit, YieldTimeMs: new(int64(0))}))
			if tc.alt {
				if end := scScreen(t, c, r.SessionID); end.Screen.AltScreen {
					t.Errorf("still in the alternate screen after exit")
				}
			}
		})
	}
}

// TestScreenFlood: a 50 MB flood completes, the screen afterwards is right, and a query
// at the end of a flood is answered with the right cursor position.
func TestScreenFlood(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, session.Options{})
	full := strings.Repeat("a", 80)
	cases := []struct {
		name, cmd string
		out       string // in the output
		rows      func([]string) bool
	}{
		{"50M without newlines", `head -c 50M /dev/zero | tr '\0' a`, "", func(rows []string) bool {
			for _, r := range rows {
				if r != full {
					return false
				}
			}
			return true
		}},
		{"query after 20M", `head -c 20M /dev/zero | tr '\0' a; printf "\033[6n"; IFS= read -rs -t10 -dR r; echo "[${r#*[}]"`,
			"[24;80]", func(rows []string) bool { return rows[21] == full && rows[22] == "[24;80]" && rows[23] == "" }},
		// After a flood the answerer reads per batch until a pause finds it caught up, so
		// every later query is answered at the pause in which the program waits for it.
		{"two queries after 20M", `head -c 20M /dev/zero | tr '\0' a; printf "\033[6n"; IFS= read -rs -t10 -dR r; echo; printf "\033[6n"; IFS= read -rs -t10 -dR s; echo "[${r#*[}][${s#*[}]"`,
			"[24;80][24;1]", func(rows []string) bool { return rows[21] == full && rows[22] == "[24;80][24;1]" && rows[23] == "" }},
		{"lines", `seq 1 1000000`, "", func(rows []string) bool { return rows[0] == "999978" && rows[22] == "1000000" && rows[23] == "" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.out != "" {
				// Without wait channels the call does not return at the read; it ends at
				// exit, and the answer line is then lost from the truncated flood's tail.
				testtool.KernelOnly(t, "needs the call to return at the read (wait channels)")
			}
			r := exec(t, c, session.ExecRequest{Cmd: tc.cmd, MaxOutputTokens: new(int64(200))})
			last := r
			for r.State != session.StateExited {
				r = write(t, c, session.WriteRequest{SessionID: r.SessionID, YieldTimeMs: new(int64(5000)), MaxOutputTokens: new(int64(200))})
				last = r
			}
			if !strings.Contains(last.Output, tc.out) {
				t.Errorf("last output %q lacks %q", last.Output, tc.out)
			}
			s := scScreen(t, c, r.SessionID)
			if !tc.rows(s.Screen.Rows) {
				t.Errorf("screen rows %q", s.Screen.Rows)
			}
		})
	}
}

// BenchmarkScreenQueryLatency measures, from the program's side, the time from writing
// a cursor position query to reading its answer, idle and right after a 4 MiB flood
// (the emulator must skip ahead first). It reports the program's own median and
// maximum in µs; b.N is not used (each run does its rounds in one session).
func BenchmarkScreenQueryLatency(b *testing.B) {
	m, err := session.NewManager(session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(context.Background())
	c := m.NewClient("bench")
	for _, bc := range []struct {
		name        string
		rounds, pre int
	}{{"idle", 500, 0}, {"after-4MiB-flood", 10, 4 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				r, err := c.Exec(context.Background(), session.ExecRequest{
					Argv:        []string{"python3", "testdata/cpr_latency.py", fmt.Sprint(bc.rounds), fmt.Sprint(bc.pre)},
					WaitFor:     `RESULT .*n=\d+`,
					YieldTimeMs: new(int64(120000)), MaxOutputTokens: new(int64(100))})
				if err != nil {
					b.Fatal(err)
				}
				for !strings.Contains(r.Output, "RESULT ") && r.State == session.StateRunning {
					// Returned early (waiting for input while it waits for an answer): go on.
					r, err = c.Write(context.Background(), session.WriteRequest{SessionID: r.SessionID,
						WaitFor: `RESULT .*n=\d+`, YieldTimeMs: new(int64(120000)), MaxOutputTokens: new(int64(100))})
					if err != nil {
						b.Fatal(err)
					}
				}
				i := strings.Index(r.Output, "RESULT ")
				if i < 0 {
					b.Fatalf("no result in %q", r.Output)
				}
				var med, p90, mx, n int
				fmt.Sscanf(r.Output[i:], "RESULT median_us=%d p90_us=%d max_us=%d n=%d", &med, &p90, &mx, &n)
				b.ReportMetric(float64(med), "median-µs")
				b.ReportMetric(float64(p90), "p90-µs")
				b.ReportMetric(float64(mx), "max-µs")
			}
		})
	}
}
