package shellint

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		kind Kind
		ok   bool
	}{
		{[]string{"bash"}, Bash, true},
		{[]string{"/usr/bin/zsh", "-i"}, Zsh, true},
		{[]string{"-fish"}, Fish, true},
		{[]string{"bash", "-c", "ls"}, "", false},
		{[]string{"bash", "script.sh"}, "", false},
		{[]string{"bash", "-l"}, "", false},
		{[]string{"bash", "--norc"}, "", false},
		{[]string{"sh"}, "", false},
		{[]string{"bashful"}, "", false},
		{nil, "", false},
	} {
		k, ok := Detect(tc.argv)
		if k != tc.kind || ok != tc.ok {
			t.Errorf("Detect(%q) = %q, %v; want %q, %v", tc.argv, k, ok, tc.kind, tc.ok)
		}
	}
}

func TestPrepare(t *testing.T) {
	var d Dir
	defer d.Close()
	env := []string{"HOME=/h", "ZDOTDIR=/z", "PTYHUB_ZDOTDIR=/stale"}
	argv, out, err := d.Prepare(Zsh, []string{"zsh"}, env)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := d.dir()
	if !slices.Equal(argv, []string{"zsh", "-i"}) || !slices.Equal(out, []string{"HOME=/h", "PTYHUB_ZDOTDIR=/z", "ZDOTDIR=" + dir}) {
		t.Errorf("zsh: %q %q", argv, out)
	}
	if !slices.Equal(env, []string{"HOME=/h", "ZDOTDIR=/z", "PTYHUB_ZDOTDIR=/stale"}) {
		t.Errorf("env modified: %q", env)
	}
	argv, _, _ = d.Prepare(Bash, []string{"/bin/bash", "-i"}, env)
	if !slices.Equal(argv, []string{"/bin/bash", "--rcfile", dir + "/bashrc", "-i"}) {
		t.Errorf("bash: %q", argv)
	}
	argv, _, _ = d.Prepare(Fish, []string{"fish"}, env)
	if !slices.Equal(argv, []string{"fish", "-i", "--init-command", "source '" + dir + "/config.fish'"}) {
		t.Errorf("fish: %q", argv)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// stream is a shell's output with marks: a first prompt, a command that ends with 2 in
// another directory, an empty line (a D without a C), and a command still running.
const stream = "\x1b]7;file://host/home/u\a\x1b]133;D;0\a\x1b]133;A\a$ \x1b]133;B\a" +
	"cd /tmp/a%20b; false\r\n\x1b]133;C;cmdline_url=cd%20/tmp/a%2520b%3B%20false\aout put\r\n" +
	"\x1b]7;file://host/tmp/a%20b\x1b\\\x1b]133;D;2\x1b\\\x1b]133;A\a$ \x1b]133;B\a" +
	"\r\n\x1b]133;D;2\a\x1b]133;A\a$ \x1b]133;B\a" +
	"sleep 9\r\n\x1b]133;C;cmdline_url=sleep%209\a"

// TestTrackerSplit: the tracker's facts are the same however the output is cut into
// reads, and each offset names the right byte.
func TestTrackerSplit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for size := 1; size <= len(stream); size++ {
		tr := NewTracker(Bash, "/start")
		for off := 0; off < len(stream); off += size {
			end := min(off+size, len(stream))
			tr.Feed([]byte(stream[off:end]), int64(off), t0.Add(time.Duration(off)*time.Millisecond))
		}
		fin := tr.Finished(0, int64(len(stream)))
		if len(fin) != 1 {
			t.Fatalf("size %d: finished %+v", size, fin)
		}
		c := fin[0]
		if c.Line != "cd /tmp/a%20b; false" || c.ExitCode != 2 || c.Cwd != "/tmp/a b" || !c.Done {
			t.Fatalf("size %d: %+v", size, c)
		}
		if out := stream[c.OutFrom:c.OutTo]; out != "out put\r\n\x1b]7;file://host/tmp/a%20b\x1b\\" {
			t.Fatalf("size %d: output %q", size, out)
		}
		if !strings.HasPrefix(stream[c.DoneAt:], "\x1b]133;A") {
			t.Fatalf("size %d: DoneAt %d", size, c.DoneAt)
		}
		st := tr.State()
		if st.Running == nil || st.Running.Line != "sleep 9" || st.Cwd != "/tmp/a b" || st.Last == nil || st.Last.ExitCode != 2 {
			t.Fatalf("size %d: state %+v", size, st)
		}
		if tr.Prompting() || tr.AtPrompt(0, int64(len(stream))) {
			t.Fatalf("size %d: at the prompt while a command runs", size)
		}
	}
}

// TestTrackerPrompt: AtPrompt counts only a prompt that ended after from and by upto.
func TestTrackerPrompt(t *testing.T) {
	tr := NewTracker(Bash, "/")
	p := "\x1b]133;A\a$ \x1b]133;B\a"
	tr.Feed([]byte(p), 0, time.Now())
	end := int64(len(p))
	if !tr.AtPrompt(0, end) || tr.AtPrompt(end, end) || tr.AtPrompt(0, end-1) || !tr.Prompting() {
		t.Fatal("AtPrompt")
	}
	// An OSC too long to keep, and one cut by CAN, change nothing.
	tr.Feed([]byte("\x1b]133;C;"+strings.Repeat("x", maxOSC)+"\a\x1b]133;C\x18"), end, time.Now())
	if !tr.Prompting() {
		t.Fatal("a skipped OSC counted")
	}
}

func TestPercentDecode(t *testing.T) {
	for in, want := range map[string]string{"a%20b": "a b", "%": "%", "%2": "%2", "%zz": "%zz", "100%25": "100%", "%0A%3b": "\n;"} {
		if got := percentDecode(in); got != want {
			t.Errorf("percentDecode(%q) = %q, want %q", in, got, want)
		}
	}
}
