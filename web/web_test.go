package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// start returns a listening view (of a socket nobody serves: the checks come first) and
// its URL.
func start(t *testing.T) (*Server, *url.URL, string) {
	t.Helper()
	dir := t.TempDir()
	s := New(Options{Socket: filepath.Join(dir, "none.sock")})
	raw, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s, u, u.Query().Get("token")
}

// client makes requests that do not follow redirects.
var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, method, rawURL string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, strings.NewReader(`{"session_id":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestToken: the URL's token opens the page once, leaves an HttpOnly, SameSite=Strict
// cookie that opens it afterwards, is kept 0600 in the token file, and nothing opens
// without it.
func TestToken(t *testing.T) {
	t.Parallel()
	s, u, token := start(t)
	if len(token) < 32 {
		t.Fatalf("token %q is too short", token)
	}
	st, err := os.Stat(s.opts.TokenFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, st.Mode())
	}
	if b, _ := os.ReadFile(s.opts.TokenFile); strings.TrimSpace(string(b)) != token {
		t.Errorf("token file holds %q, the URL %q", b, token)
	}
	base := "http://" + u.Host
	for _, path := range []string{"/", "/app.js", "/vendor/xterm/xterm.js", "/api/cast?id=1", "/ws/list", "/?token=wrong", "/?token="} {
		if r := do(t, "GET", base+path, nil); r.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s without the token: %s, want 403", path, r.Status)
		}
	}
	r := do(t, "GET", u.String(), nil)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/" {
		t.Fatalf("GET with the token: %s to %q, want a redirect to / (the token out of the address bar)", r.Status, r.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range r.Cookies() {
		cookie = c
	}
	if cookie == nil || cookie.Value != token || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v: want the token, HttpOnly, SameSite=Strict", cookie)
	}
	r = do(t, "GET", base+"/", map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Security-Policy") == "" || r.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("GET / with the cookie: %s, headers %v", r.Status, r.Header)
	}
	if r := do(t, "GET", base+"/", map[string]string{"Cookie": cookie.Name + "=" + strings.Repeat("0", len(token))}); r.StatusCode != http.StatusForbidden {
		t.Errorf("GET / with a wrong cookie: %s, want 403", r.Status)
	}
	// A new Start keeps the URL; after Close nothing listens and the file is gone.
	if again, err := s.Start(""); err != nil || again != u.String() {
		t.Errorf("second Start: %q, %v; want %q", again, err, u.String())
	}
	s.Close()
	if _, err := os.Stat(s.opts.TokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("token file after Close: %v", err)
	}
}

// TestHost: with the right token and cookie, a Host other than the loopback name or
// address the view listens on is refused (DNS rebinding: evil.example resolving to
// 127.0.0.1 reaches the port, but its pages send their own Host).
func TestHost(t *testing.T) {
	t.Parallel()
	_, u, token := start(t)
	port := u.Port()
	for _, host := range []string{"evil.example:" + port, "127.0.0.1.evil.example:" + port, "localhost.evil.example:" + port, "127.0.0.1:1", "127.0.0.1", "192.168.1.1:" + port} {
		if r := do(t, "GET", u.String(), map[string]string{"Host": host}); r.StatusCode != http.StatusForbidden {
			t.Errorf("Host %q: %s, want 403", host, r.Status)
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		if r := do(t, "GET", "http://"+u.Host+"/?token="+token, map[string]string{"Host": host}); r.StatusCode != http.StatusSeeOther {
			t.Errorf("Host %q: %s, want it served", host, r.Status)
		}
	}
}

// TestOrigin: a WebSocket or a kill from another origin is refused even with the
// cookie; from the page's own origin the WebSocket is accepted.
func TestOrigin(t *testing.T) {
	t.Parallel()
	_, u, token := start(t)
	cookie := "ptyhub_web_" + u.Port() + "=" + token
	own := "http://" + u.Host
	ws := "ws://" + u.Host + "/ws/list"
	dial := func(origin string) (*http.Response, error) {
		h := http.Header{"Cookie": {cookie}}
		if origin != "" {
			h.Set("Origin", origin)
		}
		c, resp, err := websocket.Dial(context.Background(), ws, &websocket.DialOptions{HTTPHeader: h})
		if err == nil {
			c.CloseNow()
		}
		return resp, err
	}
	for _, origin := range []string{"http://evil.example", "http://127.0.0.1:1", "null", ""} {
		resp, err := dial(origin)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("WebSocket with Origin %q: %v %v, want 403", origin, resp, err)
		}
	}
	if _, err := dial(own); err != nil {
		t.Errorf("WebSocket with the page's Origin: %v", err)
	}
	if r := do(t, "POST", own+"/api/kill", map[string]string{"Cookie": cookie, "Origin": "http://evil.example"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("kill from another origin: %s, want 403", r.Status)
	}
	if r := do(t, "POST", own+"/api/kill", map[string]string{"Cookie": cookie}); r.StatusCode != http.StatusForbidden {
		t.Errorf("kill without an Origin: %s, want 403", r.Status)
	}
}

// TestLoopbackOnly: Start refuses an address that is not loopback.
func TestLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:0"} {
		s := New(Options{Socket: filepath.Join(t.TempDir(), "s.sock")})
		if _, err := s.Start(addr); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Start(%q): %v, want ErrNotLoopback", addr, err)
			s.Close()
		}
	}
}
