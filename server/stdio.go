package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ptyhub/ptyhub/session"
)

// ServeStdio is `ptyhub dial-stdio`, the far end of a transport from another machine: it
// reads the client's hello from in, connects to this machine's server as o says
// (starting it when o.AutoStart allows), and then copies bytes both ways until either
// side ends. It speaks for this machine in the handshake:
//   - a hello of another protocol is refused here, naming both versions, before any
//     server is touched (so a client of another release never replaces this server);
//   - the build is this binary's (a server of another build is replaced or kept as
//     for a local client);
//   - a service hello without a caller gets this process's world: the user's home
//     directory and the environment the transport gave this process. A remote caller's
//     own directory and environment mean nothing here.
//
// It returns nil when the client ends the connection.
func ServeStdio(ctx context.Context, o DialOptions, in io.Reader, out io.Writer) error {
	f, err := readFrame(in, MaxFrame)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("dial-stdio: read the hello: %w", err)
	}
	mine := &Welcome{Protocol: Protocol, Build: o.build(), PID: os.Getpid()}
	refuse := func(kind, msg string, w *Welcome) error {
		var body json.RawMessage
		if w != nil {
			body, _ = json.Marshal(w)
		}
		writeFrame(out, &frame{Op: opReply, Body: body, Error: &wireError{Kind: kind, Message: msg}})
		return errors.New(msg)
	}
	var v struct {
		Protocol int `json:"protocol"`
	}
	json.Unmarshal(f.Body, &v)
	if v.Protocol != Protocol {
		return refuse(kindProtocol, fmt.Sprintf("ptyhub on this host (%s) speaks protocol %d, the client protocol %d", DescribeBuild("", mine.Build), Protocol, v.Protocol), mine)
	}
	var h hello
	if err := strictDecode(f.Body, &h); err != nil {
		return refuse("invalid", "bad hello: "+err.Error(), nil)
	}
	h.Build = mine.Build
	if h.Mode == ModeService && h.Caller == nil {
		c, err := session.Here()
		if err != nil {
			return refuse("", err.Error(), nil)
		}
		if home, err := os.UserHomeDir(); err == nil {
			if fi, err := os.Stat(home); err == nil && fi.IsDir() {
				c.Dir = home
			}
		}
		h.Caller = &c
	}
	conn, w, err := dialHello(ctx, &o, &h)
	if err != nil {
		var verr *VersionError
		if errors.As(err, &verr) {
			return refuse(kindProtocol, err.Error(), &verr.Server)
		}
		var re *RemoteError
		if errors.As(err, &re) {
			return refuse(toWire(err).Kind, re.Message, nil)
		}
		return refuse("", err.Error(), nil)
	}
	defer conn.Close()
	if err := writeFrame(out, reply(0, w)); err != nil {
		return err
	}
	// The copier from the client: owned by ServeStdio; ends when in ends (the client or
	// its transport went away), which closes the server connection, or when that
	// connection is closed on return.
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(conn, in)
		conn.Close()
	}()
	io.Copy(out, conn)
	conn.Close()
	select {
	case <-done:
	default:
		// in may block forever (a pipe nobody closes): our return closes nothing of
		// it, the process exit does.
	}
	return nil
}
