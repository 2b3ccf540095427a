package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzLineTransport feeds arbitrary input to the stdio transport: it never panics or
// stops early, every line it writes itself is one JSON-RPC error response (-32700 or
// -32600), every message it delivers is one of the input's lines, and the answer to a
// delivered request carries the request's id as the input wrote it. The input's end is
// reported once every request delivered is answered.
func FuzzLineTransport(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n",
		"garbage\n" + `{"jsonrpc":"2.0","id":"a","method":"ping"}` + "\n",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n\n",
		`{"jsonrpc":"2.0","id":null,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\r\n",
		`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" + `{"jsonrpc":"1.0","id":7}`,
		"\xff\xfe{\n" + `{"id":"x"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"ls"}}}`,
	} {
		f.Add([]byte(s))
	}
	const maxLine = 512
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		tr := &LineTransport{In: bytes.NewReader(in), Out: &out, MaxLine: maxLine}
		conn, err := tr.Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(in, []byte("\n")) + 1
		delivered := 0
		answered := 0
		for {
			msg, err := conn.Read(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if msg == nil {
				t.Fatal("nil message without an error")
			}
			if delivered++; delivered > lines {
				t.Fatalf("%d messages from %d lines", delivered, lines)
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
				if err := conn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"answered":true}`)}); err != nil {
					t.Fatalf("write: %v", err)
				}
				answered++
			}
		}
		conn.Close()
		for _, l := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(l) == 0 && out.Len() == 0 {
				break
			}
			var resp struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if bytes.HasSuffix(l, []byte(`"result":{"answered":true}}`)) {
				// An answer: its id is one the input holds, as written.
				answered--
				var m map[string]json.RawMessage
				if err := json.Unmarshal(l, &m); err != nil || !bytes.Contains(in, []byte(`"id"`)) || len(m["id"]) == 0 {
					t.Fatalf("answer %q for input %q", l, in)
				}
				continue
			}
			if err := json.Unmarshal(l, &resp); err != nil || resp.JSONRPC != "2.0" || resp.Error == nil ||
				(resp.Error.Code != -32700 && resp.Error.Code != -32600) || len(resp.ID) == 0 {
				t.Fatalf("transport wrote %q for input %q", l, in)
			}
		}
		if answered != 0 {
			t.Fatalf("%d answers missing from the output for input %q", answered, in)
		}
	})
}
