package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/internal/desktop"
	"github.com/ptyhub/ptyhub/session"
)

// askOutput is ask_human's result: how the person's turn ended and the session's new
// output, with the page the person was sent to.
type askOutput struct {
	session.AskResult
	// PageURL is the session's page in ptyhub web (absent when the view could not start).
	PageURL string `json:"page_url,omitempty"`
	// Elicited: the client was asked to open PageURL (URL-mode elicitation).
	Elicited bool `json:"elicited"`
}

// personText is the sentence for how the person's turn ended (a switch, not a map built
// while the package initialises).
func personText(person string) string {
	switch person {
	case session.PersonAnswered:
		return "The person answered: the program read their input and moved on."
	case session.PersonReleased:
		return "The person gave the session back."
	case session.PersonExited:
		return "The program exited while the person had it."
	case session.PersonTimeout:
		return "Nobody came before timeout_ms; the session still waits for a person."
	}
	return ""
}

// Text renders the result for the model.
func (o *askOutput) Text() string {
	var b strings.Builder
	b.WriteString(personText(o.Person))
	b.WriteString(" What they typed is not shown.\n")
	b.WriteString(o.Result.Text())
	return b.String()
}

// AddWarning implements the warnings hook of handler.
func (o *askOutput) AddWarning(w string) { o.Warnings = append(o.Warnings, w) }

// askHuman implements ask_human: it tells the person where the session is (a desktop
// notification; the page's URL by URL-mode elicitation when the client declares it, else
// in a progress message and in the result for the agent to relay), and waits for them.
func (s *Server) askHuman(ctx context.Context, in session.AskRequest) (*askOutput, error) {
	asker, ok := s.svc.(session.Asker)
	if !ok {
		return nil, fmt.Errorf("%w: this ptyhub cannot ask for a person", session.ErrInvalid)
	}
	out := &askOutput{}
	if s.opts.WebURL != nil {
		if u, err := s.opts.WebURL(ctx); err == nil {
			out.PageURL = u + "#session=" + in.SessionID
		} else {
			s.log.Warn("ask_human: the web view did not start", "error", err)
		}
	}
	msg := in.Message
	if msg == "" {
		msg = "a program needs you"
	}
	// The notifier: owned by this call, bounded by its 5 s timeout.
	go desktop.Notify(context.WithoutCancel(ctx), "ptyhub: session "+in.SessionID+" needs you", msg)
	if req, _ := ctx.Value(requestKey{}).(*mcp.CallToolRequest); req != nil && out.PageURL != "" && urlElicitation(req.Session) {
		out.Elicited = true
		var id [8]byte
		rand.Read(id[:])
		ectx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The elicitation: the client opens the page (after asking its user); its answer
		// does not end the wait, the person's work at the session does. Owned by this
		// call; cancelled when it returns.
		go req.Session.Elicit(ectx, &mcp.ElicitParams{Mode: "url", URL: out.PageURL,
			ElicitationID: hex.EncodeToString(id[:]),
			Message:       "ptyhub session " + in.SessionID + " needs you: " + msg + ". Open the page, press Take over, and release it when done."})
	}
	r, err := asker.AskHuman(ctx, in)
	if err != nil {
		return nil, err
	}
	out.AskResult = *r
	if !out.Elicited {
		relay := "Tell the user: session " + in.SessionID + " needs them (" + msg + "): 'ptyhub attach " + in.SessionID + "'"
		if out.PageURL != "" {
			relay += " or open " + out.PageURL
		}
		out.Warnings = append(out.Warnings, relay)
	}
	return out, nil
}

// urlElicitation reports whether the client declared URL-mode elicitation.
func urlElicitation(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil
}
