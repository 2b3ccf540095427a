package session

import (
	"strings"
	"testing"
)

func TestRepaintTail(t *testing.T) {
	t.Parallel()
	const clear = "\x1b[0m\x1b[H\x1b[2J"
	tests := []struct {
		name  string
		tail  string
		whole bool
		rows  int
		want  string
	}{
		{"last rows lines", "a\nb\nc\nd\n", true, 2, "c\nd\n"},
		{"whole short", "a\nb", true, 5, "a\nb"},
		{"partial tail starts after a newline", "xx\nb\nc", false, 5, "b\nc"},
		{"from the last clear", "old\n\x1b[2Jnew\n", true, 5, "\x1b[2Jnew\n"},
		{"alt screen from its switch", "sh$ \x1b[?1049h\x1b[Hvim\x1b[2Jdrawn", true, 5, "\x1b[?1049h\x1b[Hvim\x1b[2Jdrawn"},
		{"left alt screen", "\x1b[?1049hx\x1b[?1049l\x1b[2Jback", true, 5, "\x1b[2Jback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(repaintTail([]byte(tt.tail), tt.whole, tt.rows))
			if !strings.HasPrefix(got, clear) || got[len(clear):] != tt.want {
				t.Errorf("repaintTail(%q) = %q, want clear + %q", tt.tail, got, tt.want)
			}
		})
	}
}

// Input typed through an attachment reaches the program and is counted once for the
// agent; read-only attachments never type; resizes follow the latest client and fall
// back when it detaches.
func TestAttachment(t *testing.T) {
	t.Parallel()
	m, err := NewManager(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(t.Context()) })
	c := m.NewClient("t")
	r, err := c.Exec(t.Context(), ExecRequest{Argv: []string{"cat"}, YieldTimeMs: new(int64)})
	if err != nil {
		t.Fatal(err)
	}
	ro, _ := m.Attach(r.SessionID, AttachOptions{ReadOnly: true})
	a, _ := m.Attach(r.SessionID, AttachOptions{})
	b, _ := m.Attach(r.SessionID, AttachOptions{})
	w, _ := m.Attach(r.SessionID, AttachOptions{Watch: true})
	s, _ := m.lookup(r.SessionID)
	if n := s.att.count(); n != 3 {
		t.Errorf("%d attached terminals, want 3 (watchers do not count)", n)
	}
	if err := ro.Write([]byte("x")); err == nil {
		t.Error("a read-only attachment typed")
	}
	if err := a.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	var got []byte
	for off := int64(0); !strings.Contains(string(got), "hello\r\nhello\r\n"); {
		n, _, err := w.Read(t.Context(), buf, off)
		if err != nil {
			t.Fatal(err)
		}
		got, off = append(got, buf[:n]...), off+int64(n)
	}
	if n := s.takeHumanInput(); n != 6 {
		t.Errorf("human input %d, want 6", n)
	}
	if n := s.takeHumanInput(); n != 0 {
		t.Errorf("human input counted twice: %d", n)
	}
	size := func() (int, int) { s.mu.Lock(); defer s.mu.Unlock(); return s.rows, s.cols }
	a.Resize(30, 100)
	b.Resize(0, 5000) // clamped
	if r, c := size(); r != 1 || c != MaxCols {
		t.Errorf("size %dx%d, want 1x%d", r, c, MaxCols)
	}
	ro.Resize(50, 50) // ignored
	b.Detach()
	if r, c := size(); r != 30 || c != 100 {
		t.Errorf("after the latest client left: %dx%d, want 30x100", r, c)
	}
	a.Detach()
	ro.Detach()
	w.Detach()
	if s.humanAttached() {
		t.Error("still attached after every client detached")
	}
}
