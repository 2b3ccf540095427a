package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/ptyhub/ptyhub/session"
	"github.com/ptyhub/ptyhub/transcript"
)

// LogsOptions say what `ptyhub logs` wants from a server's transcripts.
type LogsOptions struct {
	// ID is a session's short id, UUID, unique UUID prefix or name; a session the server
	// no longer has is looked up among the transcripts on disk.
	ID string `json:"id,omitempty"`
	// All lists every transcript instead (Welcome.Transcripts); nothing is streamed.
	All bool `json:"all,omitempty"`
	// PathOnly answers with the transcript's path and streams nothing.
	PathOnly bool `json:"path_only,omitempty"`
	// Text converts to the text view; Markers shows markers on lines of their own;
	// Follow waits for more until the session ends.
	Text    bool `json:"text,omitempty"`
	Markers bool `json:"markers,omitempty"`
	Follow  bool `json:"follow,omitempty"`
}

// DialLogs connects to the server and asks for a session's transcript (or, with
// l.All, the list of transcripts in Welcome.Transcripts). The output arrives through
// Recv, which reports ended at its end; the server reads the transcript on its own
// machine, so this works over any transport.
func DialLogs(ctx context.Context, o DialOptions, l LogsOptions) (*Attach, error) {
	c, w, err := dialHello(ctx, &o, &hello{Protocol: Protocol, Build: o.build(), Mode: ModeLogs, Name: o.Name, Logs: &l})
	if err != nil {
		return nil, err
	}
	return &Attach{c: c, Welcome: w}, nil
}

// serveLogs answers a logs hello: the transcript's path, then its output as output
// frames and an end frame. A reader goroutine (owned here, ended by closing the
// connection) notices the client leaving and stops a follow.
func (s *Server) serveLogs(c *net.UnixConn, hf *frame, h hello, w *Welcome) {
	out := &sender{c: c}
	fail := func(err error) { out.send(&frame{Op: opReply, Error: toWire(err)}) }
	l := h.Logs
	if l == nil {
		fail(fmt.Errorf("%w: logs hello without options", session.ErrInvalid))
		return
	}
	dir, err := s.mgr.TranscriptDir()
	if err != nil {
		fail(err)
		return
	}
	if l.All {
		if w.Transcripts, err = transcript.List(dir); err != nil {
			fail(err)
			return
		}
		out.send(reply(0, w))
		return
	}
	path, err := s.mgr.TranscriptPath(l.ID)
	if err != nil {
		info, ferr := transcript.Find(dir, l.ID)
		if ferr != nil && s.relay(c, hf, l.ID) {
			return // a session of a host that records elsewhere, or known by its name
		}
		if ferr != nil {
			fail(fmt.Errorf("%w: no session or transcript %q (ptyhub logs --all lists the transcripts): %v", session.ErrNotFound, l.ID, ferr))
			return
		}
		path = info.Path
	}
	w.Path = path
	if l.PathOnly {
		out.send(reply(0, w))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc, err := transcript.Output(ctx, path, transcript.OutputOptions{Follow: l.Follow, Markers: l.Markers, Text: l.Text})
	if err != nil {
		fail(err)
		return
	}
	defer rc.Close()
	if out.send(reply(0, w)) != nil {
		return
	}
	inDone := make(chan struct{})
	go func() {
		defer close(inDone)
		defer cancel()
		for {
			if _, err := readFrame(c, MaxFrame); err != nil {
				return
			}
		}
	}()
	defer func() { c.Close(); <-inDone }()
	buf := make([]byte, 32<<10)
	for {
		n, err := rc.Read(buf)
		if n > 0 {
			if out.send(&frame{Op: opOutput, Data: buf[:n]}) != nil {
				return
			}
		}
		if errors.Is(err, io.EOF) {
			out.send(&frame{Op: opEnd, Body: []byte(`{}`)})
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				out.send(&frame{Op: opReply, Error: toWire(err)})
			}
			return
		}
	}
}
