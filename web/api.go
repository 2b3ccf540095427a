package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/coder/websocket"

	"github.com/ptyhub/ptyhub/server"
	"github.com/ptyhub/ptyhub/session"
)

// listInterval is how often the session list is read for a page that shows it.
const listInterval = 400 * time.Millisecond

// wsWriteTimeout bounds one write to a browser; one that does not read for that long is
// dropped (it never slows a session: the server's attach stream resynchronises).
const wsWriteTimeout = 30 * time.Second

func (s *Server) dial(ctx context.Context) (*server.Client, error) {
	return server.Dial(ctx, server.DialOptions{Socket: s.opts.Socket, Name: "web"})
}

// accept upgrades r to a WebSocket. ServeHTTP has checked the Origin already; the
// library checks it again against r.Host.
func accept(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
	return websocket.Accept(w, r, nil)
}

// serveList streams the session list to the page: a JSON text message each time it
// changes, read every listInterval. It ends when the page goes away.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request) {
	c, err := accept(w, r)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context()) // the page sends nothing; its close ends ctx
	cl, err := s.dial(ctx)
	if err != nil {
		c.Close(websocket.StatusInternalError, oneLine(err.Error()))
		return
	}
	defer cl.Abandon()
	var last []byte
	tick := time.NewTicker(listInterval)
	defer tick.Stop()
	for {
		l, err := cl.List(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.Close(websocket.StatusInternalError, oneLine(err.Error()))
			}
			return
		}
		b, _ := json.Marshal(struct {
			Sessions []session.Info `json:"sessions"`
		}{l.Sessions})
		if !bytes.Equal(b, last) {
			wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
			err := c.Write(wctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				return
			}
			last = b
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// control is a message between the page and serveAttach, as JSON text. Output goes to
// the page as binary messages.
type control struct {
	Type    string `json:"type"`              // page: input, resize, take, release; server: mode, end, error
	Data    string `json:"data,omitempty"`    // input: the keys
	Rows    int    `json:"rows,omitempty"`    // resize, take
	Cols    int    `json:"cols,omitempty"`    // resize, take
	Mode    string `json:"mode,omitempty"`    // mode: "read-only" or "control"
	Exit    string `json:"exit,omitempty"`    // end: how the session ended
	Message string `json:"message,omitempty"` // error
	Session string `json:"session,omitempty"` // mode: the session's id
	Command string `json:"command,omitempty"` // mode: its command
}

// event is what a pump hands serveAttach: output, the end, or the stream's failure.
type event struct {
	gen   int
	data  []byte
	ended bool
	exit  string
	err   error
}

// serveAttach shows one session's terminal: it attaches read-only (the screen is
// repainted, then live output follows) and, when the page asks to take over, attaches
// again as a typing client of the page's size (the read-only attachment is dropped and
// the screen repainted), until the page releases it. All writes to the page happen on
// this goroutine, in order; each attachment has one pump goroutine (owned here, ended by
// closing its attachment or by the handler's context) that hands its output over.
func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	c, err := accept(w, r)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	p := &pageView{s: s, c: c, ctx: ctx, id: id, events: make(chan event)}
	// The page's messages: read by one goroutine (owned here; it ends when the
	// connection does, which the deferred CloseNow forces).
	msgs := make(chan control)
	go p.readMessages(msgs, cancel)
	defer func() {
		if p.cur != nil {
			p.cur.Close()
		}
	}()
	if err := p.open(true, 0, 0); err != nil {
		p.sendControl(control{Type: "error", Message: oneLine(err.Error())})
		c.Close(websocket.StatusNormalClosure, "")
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-p.events:
			if !p.forward(ev) {
				return
			}
		case m := <-msgs:
			p.obey(m)
		}
	}
}

// pageView is one page's view of a session in serveAttach. Its methods other than
// readMessages and the pumps run on serveAttach's goroutine only.
type pageView struct {
	s      *Server
	c      *websocket.Conn
	ctx    context.Context // the handler's; cancelled when the page goes
	id     string          // the session, as the page named it
	events chan event      // from the pumps

	cur     *server.Attach // the current attachment
	gen     int            // counts attachments; events of older ones are dropped
	control bool           // the page types into the session
	ended   bool           // the session ended
}

// send writes one message to the page, giving up after wsWriteTimeout.
func (p *pageView) send(typ websocket.MessageType, b []byte) error {
	wctx, wcancel := context.WithTimeout(p.ctx, wsWriteTimeout)
	defer wcancel()
	return p.c.Write(wctx, typ, b)
}

func (p *pageView) sendControl(m control) error {
	b, _ := json.Marshal(m)
	return p.send(websocket.MessageText, b)
}

// readMessages hands the page's control messages to msgs until the connection or
// p.ctx ends, then calls cancel. Unreadable messages are skipped.
func (p *pageView) readMessages(msgs chan<- control, cancel context.CancelFunc) {
	defer cancel()
	for {
		_, b, err := p.c.Read(p.ctx)
		if err != nil {
			return
		}
		var m control
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		select {
		case msgs <- m:
		case <-p.ctx.Done():
			return
		}
	}
}

// open attaches to the session anew (closing the current attachment), starts its pump
// and tells the page the mode.
func (p *pageView) open(readOnly bool, rows, cols int) error {
	a, err := server.DialAttach(p.ctx, server.DialOptions{Socket: p.s.opts.Socket, Name: "web"},
		server.AttachOptions{Session: p.id, ReadOnly: readOnly, Rows: rows, Cols: cols})
	if err != nil {
		return err
	}
	if p.cur != nil {
		p.cur.Close()
	}
	p.cur = a
	p.gen++
	g := p.gen
	go func() {
		for {
			data, ended, exit, err := a.Recv()
			select {
			case p.events <- event{gen: g, data: data, ended: ended, exit: exit, err: err}:
			case <-p.ctx.Done():
				return
			}
			if ended || err != nil {
				return
			}
		}
	}()
	mode := "control"
	if readOnly {
		mode = "read-only"
	}
	return p.sendControl(control{Type: "mode", Mode: mode, Session: a.Welcome.SessionID, Command: a.Welcome.Command})
}

// forward passes a pump's event to the page; false says serveAttach should return.
func (p *pageView) forward(ev event) bool {
	if ev.gen != p.gen {
		return true // a dropped attachment's last words
	}
	switch {
	case ev.ended:
		p.ended = true
		return p.sendControl(control{Type: "end", Exit: ev.exit}) == nil
	case ev.err != nil:
		if !p.ended {
			p.sendControl(control{Type: "error", Message: oneLine(ev.err.Error())})
		}
		p.c.Close(websocket.StatusNormalClosure, "")
		return false
	default:
		return p.send(websocket.MessageBinary, ev.data) == nil
	}
}

// obey carries out one message of the page; a failure is told to the page.
func (p *pageView) obey(m control) {
	var err error
	switch m.Type {
	case "take":
		if !p.control && !p.ended {
			if err = p.open(false, m.Rows, m.Cols); err == nil {
				p.control = true
			}
		}
	case "release":
		if p.control && !p.ended {
			if err = p.open(true, 0, 0); err == nil {
				p.control = false
			}
		}
	case "input":
		if p.control {
			err = p.cur.Input([]byte(m.Data))
		}
	case "resize":
		if p.control && m.Rows > 0 && m.Cols > 0 {
			err = p.cur.Resize(m.Rows, m.Cols)
		}
	}
	if err != nil {
		p.sendControl(control{Type: "error", Message: oneLine(err.Error())})
	}
}

// serveKill ends a session (POST, JSON {"session_id": …}), as `ptyhub kill` does.
func (s *Server) serveKill(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "ptyhub web: POST a JSON body {\"session_id\": …}", http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		SessionID string `json:"session_id"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil || req.SessionID == "" {
		http.Error(w, "ptyhub web: POST a JSON body {\"session_id\": …}", http.StatusBadRequest)
		return
	}
	ctx, cancel := requestContext(r)
	defer cancel()
	cl, err := s.dial(ctx)
	if err != nil {
		http.Error(w, oneLine(err.Error()), http.StatusBadGateway)
		return
	}
	defer cl.Abandon()
	res, err := cl.Kill(ctx, session.KillRequest{SessionID: req.SessionID})
	if err != nil {
		httpError(w, err, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(res)
}

// httpError answers with err on one line, as status, or as 404 Not Found when err says
// the session does not exist.
func httpError(w http.ResponseWriter, err error, status int) {
	if errors.Is(err, session.ErrNotFound) {
		status = http.StatusNotFound
	}
	http.Error(w, oneLine(err.Error()), status)
}

// serveCast sends a session's transcript (asciicast v2) for the player.
func (s *Server) serveCast(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	ctx, cancel := requestContext(r)
	defer cancel()
	l, err := server.DialLogs(ctx, server.DialOptions{Socket: s.opts.Socket, Name: "web"}, server.LogsOptions{ID: id, PathOnly: true})
	if err != nil {
		httpError(w, err, http.StatusBadGateway)
		return
	}
	path := l.Welcome.Path
	l.Close()
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, fmt.Sprintf("ptyhub web: transcript: %v", err), http.StatusNotFound)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.Error(w, "ptyhub web: the transcript is not a regular file", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
