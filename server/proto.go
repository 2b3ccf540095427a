package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ptyhub/ptyhub/session"
	"github.com/ptyhub/ptyhub/transcript"
)

// The wire protocol: each frame is a 4-byte big-endian length, then that many bytes of
// one JSON object (frame). The client opens with a hello and the server answers with a
// welcome (or an error, then closes). Both carry the protocol version and the build of
// the binary; a hello of another protocol is answered with an error of kind "protocol"
// whose body is the welcome, so any client can tell what it reached. A service hello
// carries the caller (directory and environment) its sessions start in. A service
// connection then carries requests (id, op, body), op one of the operations registered
// in ops.go, answered by one reply each with the same id, in any order, served
// concurrently; "cancel" with a request's id cancels that request's context. An attach
// connection carries output frames from the server and input/winsize frames from the
// client, and ends with an "end" frame when the session's output ended.

// Protocol is the version of the wire protocol, bumped when it changes incompatibly.
// Protocol 1 (the first release) had no build and no caller in its hello.
const Protocol = 2

// MaxFrame is the largest frame the server accepts from a client. A larger one gets an
// error reply and the connection is closed (the server and its other clients carry on).
const MaxFrame = 16 << 20

// maxReplyFrame is the largest frame a client accepts from its server.
const maxReplyFrame = 256 << 20

// The ops of the connection itself; those of its requests are the registered
// operations (ops.go).
const (
	opCancel = "cancel" // cancel the request of the frame's id
	opBye    = "bye"    // end the connection; body byeBody: sessions owned by it end unless keep
	opReply  = "reply"

	// attach
	opOutput  = "output"  // server → client: Data
	opInput   = "input"   // client → server: Data
	opWinsize = "winsize" // client → server: body winsize
	opEnd     = "end"     // server → client: body endBody; the server then closes
)

// Status is the server's health: its sessions by state, its file descriptors and their
// limit, its memory, its connections (ptyhub status).
type Status struct {
	session.Stats
	PID         int    `json:"pid"`
	Version     string `json:"version,omitempty"`
	Connections int    `json:"connections"`
	UptimeMs    int64  `json:"uptime_ms"`
	// Hosts are the processes (ptyhub mcp) that host sessions of their own next to the
	// server, as each reports itself.
	Hosts []Status `json:"hosts,omitempty"`
}

// Modes of a connection, chosen by the hello.
const (
	ModeService = "service"
	ModeAttach  = "attach"
	// ModeLogs streams a session's transcript (see DialLogs).
	ModeLogs = "logs"
)

type frame struct {
	ID    uint64          `json:"id,omitempty"`
	Op    string          `json:"op"`
	Body  json.RawMessage `json:"body,omitempty"`
	Data  []byte          `json:"data,omitempty"`
	Error *wireError      `json:"error,omitempty"`
}

type hello struct {
	Protocol int    `json:"protocol"`
	Build    string `json:"build"`
	Mode     string `json:"mode"`
	Name     string `json:"name,omitempty"`
	// Caller is where the connection's sessions start (absent: the server's own
	// directory and environment).
	Caller *session.Caller `json:"caller,omitempty"`
	// Own: sessions started on this connection end when it closes (ptyhub mcp without
	// --keep). Otherwise they stay with the server until killed.
	Own bool `json:"own,omitempty"`
	// Token names the client across connections (see DialOptions.Token).
	Token string `json:"token,omitempty"`

	// Logs mode.
	Logs *LogsOptions `json:"logs,omitempty"`

	// Attach mode.
	Session  string `json:"session,omitempty"`
	ReadOnly bool   `json:"read_only,omitempty"`
	Watch    bool   `json:"watch,omitempty"` // not a terminal: stream from From, no repaint
	From     *int64 `json:"from,omitempty"`
	Rows     int    `json:"rows,omitempty"`
	Cols     int    `json:"cols,omitempty"`
}

// Welcome is the server's answer to a hello.
type Welcome struct {
	Protocol int    `json:"protocol"`
	Build    string `json:"build"`
	PID      int    `json:"pid"`
	Version  string `json:"version,omitempty"`
	// ExeDeleted: the server's executable file was deleted or replaced since it started
	// (it runs a build nobody can start again).
	ExeDeleted bool `json:"exe_deleted,omitempty"`
	// Running counts the server's running sessions.
	Running int `json:"running"`
	// Logs mode: the transcript streamed (Path, on the server's machine) or, for
	// LogsOptions.All, every transcript.
	Path        string            `json:"path,omitempty"`
	Transcripts []transcript.Info `json:"transcripts,omitempty"`
	// Attach mode.
	SessionID string `json:"session_id,omitempty"`
	Command   string `json:"command,omitempty"`
}

type webBody struct {
	Listen string `json:"listen,omitempty"`
}

type webReply struct {
	URL string `json:"url"`
}

type byeBody struct {
	Keep bool `json:"keep"`
}

type winsize struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

type endBody struct {
	Exit string `json:"exit"`
}

// wireError carries an error, which session sentinel it wraps, and the invalid
// argument it names, if any (an older peer ignores arg and words the message).
type wireError struct {
	Kind    string            `json:"kind,omitempty"`
	Message string            `json:"message"`
	Arg     *session.ArgError `json:"arg,omitempty"`
}

// kindProtocol marks a hello refused for its protocol version; the frame's body is the
// server's Welcome.
const kindProtocol = "protocol"

var kinds = []struct {
	name string
	err  error
}{
	{"invalid", session.ErrInvalid},
	{"not_found", session.ErrNotFound},
	{"exited", session.ErrExited},
	{"limit", session.ErrLimit},
}

func toWire(err error) *wireError {
	w := &wireError{Message: err.Error()}
	var ae *session.ArgError
	if errors.As(err, &ae) {
		w.Arg = ae
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			w.Kind = k.name
			break
		}
	}
	return w
}

// RemoteError is an error returned by the server. It wraps the session sentinel error
// (ErrInvalid, ErrNotFound, …) the server's error wrapped, and the *session.ArgError it
// carried, so errors.Is and errors.As work as with the in-process manager.
type RemoteError struct {
	Message string
	kind    error
	arg     *session.ArgError
}

func (e *RemoteError) Error() string { return e.Message }
func (e *RemoteError) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.arg != nil {
		errs = append(errs, e.arg)
	}
	return errs
}

func fromWire(w *wireError) error {
	e := &RemoteError{Message: w.Message, arg: w.Arg}
	for _, k := range kinds {
		if k.name == w.Kind {
			e.kind = k.err
		}
	}
	return e
}

// errFrameTooBig reports a frame over the limit.
var errFrameTooBig = errors.New("frame too large")

// writeFrame writes f as one frame. Not safe for concurrent use on one w.
func writeFrame(w io.Writer, f *frame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("server: encode frame: %w", err)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// readFrame reads one frame of at most max bytes.
func readFrame(r io.Reader, max int) (*frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", errFrameTooBig, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	f := &frame{}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("server: bad frame: %w", err)
	}
	return f, nil
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
