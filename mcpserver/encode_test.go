package mcpserver

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptyhub/ptyhub/session"
)

// sdkResultBytes is a result as the SDK's JSON-RPC layer writes it: the response's
// "result" of jsonrpc.EncodeMessage, with "resultType":"complete" last when complete.
func sdkResultBytes(t *testing.T, res *mcp.CallToolResult, complete bool) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := jsonrpc.MakeID(float64(1))
	line, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: b})
	if err != nil {
		t.Fatal(err)
	}
	out, ok := bytes.CutPrefix(line, []byte(`{"jsonrpc":"2.0","id":1,"result":`))
	if !ok {
		t.Fatalf("unexpected response: %s", line)
	}
	out = out[:len(out)-1]
	if complete {
		out = append(append(out[:len(out)-1:len(out)-1], `,"resultType":"complete"`...), '}')
	}
	return string(out)
}

// A tool's result is encoded once, in a buffer of about its size, into the bytes the
// SDK writes for it: every text (HTML, line and paragraph separators, control bytes,
// invalid UTF-8, quotes), with and without structured content, errors, the
// multi-round-trip protocol's resultType, a _meta (the server's info the sessionless
// protocol's results carry, as the Go SDK's client asks them).
func TestToolResultEncodedOnce(t *testing.T) {
	code := 0
	structured, err := json.Marshal(&session.Result{SessionID: "1", State: session.StateExited, ExitCode: &code,
		ReturnedBecause: session.BecauseExit, Output: "<b>&\u2028 é \x1b[0m\n", ChunkID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"", "Chunk ID: c1\nWall time: 0.0100 seconds\nProcess exited with code 0\nOutput:\nhi\n",
		"<b>&</b> \u2028\u2029", "\x00\x01\b\f\n\r\t\x1f\x7f", "bad \xff\xfe utf-8 \xe2\x82", `"quoted" \back\slash`,
		strings.Repeat("é<\x01", 20000)}
	for _, text := range texts {
		for _, sc := range []json.RawMessage{nil, structured} {
			for _, isErr := range []bool{false, true} {
				for _, complete := range []bool{false, true} {
					res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}
					if sc != nil {
						res.StructuredContent = sc
					}
					if complete && isErr {
						res.Meta = mcp.Meta{mcp.MetaKeyServerInfo: &mcp.Implementation{Name: "ptyhub", Version: "<devel>&"}, "a": []int{1}}
					}
					if complete && !isErr {
						res.Meta = mcp.Meta{} // omitted, as an empty _meta
					}
					got, err := encodeResult(res, complete, nil)
					if err != nil {
						t.Fatal(err)
					}
					if want := sdkResultBytes(t, res, complete); string(got) != want {
						t.Errorf("text %.40q, structured %v, error %v, complete %v:\n got %.300s\nwant %.300s", text, sc != nil, isErr, complete, got, want)
					}
				}
			}
		}
	}
	// The server's info as fastCall adds it, encoded ahead: the same bytes.
	info := &mcp.Implementation{Name: "ptyhub", Title: "ptyhub", Version: "<devel>"}
	known := newKnownMeta(info)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: texts[1]}}, StructuredContent: json.RawMessage(structured)}
	res.SetMeta(map[string]any{mcp.MetaKeyServerInfo: info})
	if got, _ := encodeResult(res, true, &known); string(got) != sdkResultBytes(t, res, true) {
		t.Errorf("with the server's info encoded ahead:\n got %s\nwant %s", got, sdkResultBytes(t, res, true))
	}
	if raceOn {
		return
	}
	if n := testing.AllocsPerRun(50, func() { encodeResult(res, true, &known) }); n > 3 {
		t.Errorf("encoding an exec's result allocated %.0f times, want at most 3 (its bytes, a bytes.Buffer and an encoder)", n)
	}
}
