// Package web is ptyhub's browser view (`ptyhub web`): a page on a loopback TCP port
// that lists every session the per-user server sees, live, shows one session's terminal
// in xterm.js (its screen repainted, then live output, as `ptyhub attach --read-only`),
// lets the person take the keyboard ("Take over") and give it back, kills a session
// after a confirmation, and replays the transcript of an ended one (asciinema-player).
//
// The page is a client of the server like the CLI: each browser connection dials the
// server's Unix socket (a service connection for the list, an attach connection for a
// terminal), so it sees the sessions of every agent and host the server folds in.
//
// Security: it listens on loopback only; every request needs the random token printed
// in the URL (then an HttpOnly, SameSite=Strict cookie); the Host header must be the
// loopback name or address it listens on, which defeats DNS rebinding; a WebSocket's
// Origin and a state-changing request's Origin must be the page's own. A terminal is
// read-only until the person presses "Take over".
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

//go:embed static
var static embed.FS

// Options configure a Server.
type Options struct {
	// Socket is the ptyhub server's socket, which the page's connections dial.
	Socket string
	// TokenFile is where the token is kept, mode 0600 (default web.token beside
	// Socket).
	TokenFile string
	// Logger receives operational logs (default: discard).
	Logger *slog.Logger
}

// Server is the browser view. Start it with Start; Close stops it. Safe for concurrent
// use.
type Server struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	ln     net.Listener
	srv    *http.Server
	token  string
	port   string
	hosts  map[string]bool    // Host header values accepted
	served chan struct{}      // closed when the HTTP server's goroutine ends
	stop   context.CancelFunc // cancels every request's context (WebSockets are hijacked: srv.Close does not reach them)
}

// New returns a Server that is not listening yet.
func New(opts Options) *Server {
	if opts.TokenFile == "" {
		opts.TokenFile = filepath.Join(filepath.Dir(opts.Socket), "web.token")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, log: opts.Logger}
}

// ErrNotLoopback is returned by Start for a listen address that is not a loopback one.
var ErrNotLoopback = errors.New("ptyhub web listens on loopback only")

// Start starts listening on listen (host:port; default 127.0.0.1 on a free port) unless
// already listening, writes a new random token to the token file (0600), and returns the
// page's URL with the token. The HTTP server runs on a goroutine owned by s until Close.
// A second Start returns the running URL; with a listen address other than the one in
// use it is an error.
func (s *Server) Start(listen string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		if listen != "" && listen != s.ln.Addr().String() {
			return "", fmt.Errorf("ptyhub web already listens on %s; stop the server (ptyhub kill-server) to move it to %s", s.ln.Addr(), listen)
		}
		return s.urlLocked(), nil
	}
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("ptyhub web: bad listen address %q: %w (want host:port, e.g. 127.0.0.1:8765)", listen, err)
	}
	if !isLoopbackName(host) {
		return "", fmt.Errorf("%w: %q is not 127.0.0.1, ::1 or localhost", ErrNotLoopback, host)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", fmt.Errorf("ptyhub web: listen: %w", err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return "", fmt.Errorf("%w: %s", ErrNotLoopback, ln.Addr())
	}
	var b [32]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	if err := writeToken(s.opts.TokenFile, token); err != nil {
		ln.Close()
		return "", err
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s.ln, s.token, s.port = ln, token, port
	s.hosts = map[string]bool{}
	for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
		s.hosts[h+":"+port] = true
	}
	if host != "" && host != "localhost" {
		s.hosts[net.JoinHostPort(host, port)] = true
	}
	base, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	s.served = make(chan struct{})
	srv, served := s.srv, s.served
	// The HTTP server: owned by s, ends when Close shuts it down.
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	s.log.Info("web view listening", "addr", ln.Addr().String())
	return s.urlLocked(), nil
}

// URL returns the page's URL with its token, or "" when not listening.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.urlLocked()
}

func (s *Server) urlLocked() string {
	host, _, _ := net.SplitHostPort(s.ln.Addr().String())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return "http://" + host + ":" + s.port + "/?token=" + s.token
}

// Close stops listening, ends every browser connection and removes the token file.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, served, stop := s.srv, s.served, s.stop
	s.srv, s.ln = nil, nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	os.Remove(s.opts.TokenFile)
	err := srv.Close()
	stop() // the WebSocket handlers end with their request's context
	<-served
	return err
}

// writeToken writes token to path, mode 0600, refusing to follow a symlink.
func writeToken(path, token string) error {
	os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("ptyhub web: token file: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(token + "\n"); err != nil {
		return fmt.Errorf("ptyhub web: token file: %w", err)
	}
	return nil
}

func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cookieName names the token cookie; cookies do not tell ports apart, so the port is
// part of the name (two servers on one machine keep their own).
func (s *Server) cookieName() string { return "ptyhub_web_" + s.port }

// ServeHTTP checks every request (Host, token, Origin) and serves the page, its assets
// and its API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	token, hosts := s.token, s.hosts
	s.mu.Unlock()
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; worker-src 'self' blob:; frame-ancestors 'none'")
	if !hosts[r.Host] {
		http.Error(w, fmt.Sprintf("ptyhub web: refused: Host %q is not the address this server listens on (open the URL ptyhub web printed)", r.Host), http.StatusForbidden)
		return
	}
	if q := r.URL.Query().Get("token"); q != "" {
		if !equal(q, token) {
			http.Error(w, "ptyhub web: refused: wrong token (run ptyhub web for the current URL)", http.StatusForbidden)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		if r.Method == http.MethodGet && r.URL.Path == "/" {
			// Take the token out of the address bar and the history.
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
	} else if c, err := r.Cookie(s.cookieName()); err != nil || !equal(c.Value, token) {
		http.Error(w, "ptyhub web: refused: no token (open the URL ptyhub web printed; it carries one)", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead || r.Header.Get("Upgrade") != "" {
		// State changes and WebSockets: the page's own origin only.
		if o := r.Header.Get("Origin"); o != "http://"+r.Host {
			http.Error(w, fmt.Sprintf("ptyhub web: refused: Origin %q is not this page's", o), http.StatusForbidden)
			return
		}
	}
	switch {
	case r.URL.Path == "/ws/list":
		s.serveList(w, r)
	case r.URL.Path == "/ws/attach":
		s.serveAttach(w, r)
	case r.URL.Path == "/api/kill":
		s.serveKill(w, r)
	case r.URL.Path == "/api/cast":
		s.serveCast(w, r)
	case r.URL.Path == "/favicon.ico":
		w.WriteHeader(http.StatusNoContent)
	default:
		sub, _ := fs.Sub(static, "static")
		http.FileServerFS(sub).ServeHTTP(w, r)
	}
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// requestContext returns a context for one request's calls to the ptyhub server.
func requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}
