package ptyhub_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptyhub/ptyhub/internal/testtool"
)

// webStep is one step of testdata/webclient/web.mjs's report.
type webStep struct {
	Name     string  `json:"name"`
	ID       string  `json:"id"`
	Row      string  `json:"row"`
	Mode     string  `json:"mode"`
	Text     string  `json:"text"`
	Needs    string  `json:"needs"`
	Ask      string  `json:"ask"`
	Rows     int     `json:"rows"`
	Cols     int     `json:"cols"`
	XtermRow string  `json:"xtermRows"`
	Status   string  `json:"status"`
	Take     bool    `json:"take"`
	Release  bool    `json:"release"`
	Fill     float64 `json:"fill"`
	Kept     bool    `json:"kept"`
}

// TestWebBrowser drives `ptyhub web` in Debian's chromium (headless, through
// playwright-core): a session an agent starts appears in the list, its row updated in
// place; opened, its screen is repainted read-only and its output follows live; keys
// typed before "Take over" reach nothing; after it, a password typed in the page reaches
// the program and never appears in any result, view, listing or transcript; the program
// sees the page's size, also after the window is resized, and the terminal fills the
// view; ctrl-] gives the session back without the key reaching the program, and so does
// "Release" after a second "Take over"; the ended session replays from its transcript;
// and a session is killed from the page.
func TestWebBrowser(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "python3")
	node := testtool.Path(t, "node")
	chromium := testtool.Path(t, "chromium")
	dir := e2eNodeDir(t, "webclient", "playwright-core", "web.mjs")
	sv := svNew(t)
	url := strings.TrimSpace(sv.ok("web"))
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/?token=") {
		t.Fatalf("ptyhub web printed %q, want http://127.0.0.1:PORT/?token=…", url)
	}
	var b [8]byte
	rand.Read(b[:])
	password := "pw-" + hex.EncodeToString(b[:])
	cfg, _ := json.Marshal(map[string]string{"url": url, "chromium": chromium, "ptyhub": sv.bin,
		"password": password, "screenshot": os.Getenv("PTYHUB_WEB_SCREENSHOT")})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, filepath.Join(dir, "web.mjs"), string(cfg))
	cmd.Dir, cmd.Env = sv.dir, append(sv.env, "PWD="+sv.dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var report struct {
		OK       bool      `json:"ok"`
		Error    string    `json:"error"`
		Steps    []webStep `json:"steps"`
		Agent    []string  `json:"agent"`
		PageText string    `json:"pageText"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil || runErr != nil || !report.OK {
		t.Fatalf("web.mjs: %v %v: %s\nreport: %s\nstderr: %s", runErr, err, report.Error, stdout.String(), stderr.String())
	}
	steps := map[string]webStep{}
	for _, s := range report.Steps {
		steps[s.Name] = s
	}
	if s := steps["listed"]; s.ID == "" || !strings.Contains(s.Row, "python3") {
		t.Errorf("the list's row of the new session: %+v", s)
	}
	if m := steps["repainted"].Mode; m != "read-only" {
		t.Errorf("a session opens read-only; the page said %q", m)
	}
	if !strings.Contains(steps["live"].Text, "hello ALICE") {
		t.Errorf("the agent's input's answer did not appear live: %q", steps["live"].Text)
	}
	if s := steps["password-listed"]; !strings.Contains(s.Needs, "password prompt") || !strings.Contains(s.Ask, "password prompt") {
		t.Errorf("a session at a password prompt is not marked as needing a person: %+v", s)
	}
	if !steps["password-listed"].Kept {
		t.Errorf("the list replaced the session's row while updating it (a click on a busy session's row can be lost)")
	}
	typed := steps["typed"].Text
	if !strings.Contains(typed, fmt.Sprintf("pw-length %d", len(password))) || strings.Contains(typed, "pw-length 7") {
		t.Errorf("after Take over, the password typed in the page should reach the program, and the keys typed read-only (\"ignored\") should not: %q", typed)
	}
	for _, n := range []string{"size1", "size2"} {
		s := steps[n]
		if got := fmt.Sprintf("%dx%d", s.Rows, s.Cols); got != s.XtermRow {
			t.Errorf("%s: the program sees %s, the page's terminal is %s", n, got, s.XtermRow)
		}
		if s.Fill < 0.95 {
			t.Errorf("%s: the terminal ends at %.0f%% of the window's height; taken over, it should fill the view", n, 100*s.Fill)
		}
	}
	if steps["size1"].XtermRow == steps["size2"].XtermRow {
		t.Errorf("resizing the window did not resize the session: %s both times", steps["size1"].XtermRow)
	}
	if s, ok := steps["ctrl-released"]; !ok || !s.Take || s.Release {
		t.Errorf("ctrl-] did not give the session back (Take over shown, Release hidden): %+v", s)
	}
	if s := steps["retaken"]; s.Text != "unknown 'after'" {
		t.Errorf("the line typed after ctrl-] and a second Take over reached the program as %q, want \"unknown 'after'\" (ctrl-] must not be sent)", s.Text)
	}
	if !strings.Contains(steps["ended"].Status, "ended") {
		t.Errorf("the end of the session: %q", steps["ended"].Status)
	}
	if !strings.Contains(steps["replayed"].Text, "hello ALICE") {
		t.Errorf("the replay of the ended session: %q", steps["replayed"].Text)
	}
	if _, ok := steps["killed"]; !ok {
		t.Errorf("the kill from the page did not end the session")
	}

	// The password is nowhere but in the program.
	id := steps["listed"].ID
	castPath := strings.TrimSpace(sv.ok("logs", "--cast", id))
	cast, err := os.ReadFile(castPath)
	if err != nil {
		t.Fatal(err)
	}
	places := map[string]string{
		"the page and the agent's results": stdout.String(),
		"read (text view)":                 sv.ok("read", "--json", id),
		"read --raw":                       sv.ok("read", "--raw", id),
		"read --screen":                    sv.ok("read", "--screen", id),
		"logs":                             sv.ok("logs", id),
		"ls --json":                        sv.ok("ls", "--json"),
		"the transcript":                   string(cast),
	}
	for where, text := range places {
		if strings.Contains(text, password) {
			t.Errorf("the password typed in the page appears in %s", where)
		}
		if strings.Contains(text, "ignored") {
			t.Errorf("keys typed in the page while read-only reached the program (%s)", where)
		}
	}
	if !strings.Contains(string(cast), "hidden input") {
		t.Errorf("the transcript does not record the hidden input as a count:\n%s", cast)
	}
}
