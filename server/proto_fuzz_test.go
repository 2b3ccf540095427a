package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/ptyhub/ptyhub/session"
)

// FuzzFrames feeds arbitrary bytes to the frame reader and to the decoding the server
// applies to what it reads (the hello, request bodies, error replies): nothing may
// panic, a frame that decodes survives a write and a read unchanged, and the length
// limit holds.
func FuzzFrames(f *testing.F) {
	enc := func(frames ...*frame) []byte {
		var b bytes.Buffer
		for _, fr := range frames {
			if err := writeFrame(&b, fr); err != nil {
				f.Fatal(err)
			}
		}
		return b.Bytes()
	}
	hb, _ := json.Marshal(hello{Protocol: Protocol, Build: "b", Mode: ModeService, Caller: &session.Caller{Dir: "/tmp", Env: []string{"A=1"}}})
	f.Add(enc(&frame{Op: "hello", Body: hb}, &frame{ID: 1, Op: opList.name}, &frame{ID: 2, Op: opRead.name, Body: json.RawMessage(`{"session_id":"1","view":"raw"}`)}))
	f.Add(enc(&frame{ID: 3, Op: opWrite.name, Body: json.RawMessage(`{"session_id":"1","chars":"ls\n","yield_time_ms":-5}`)}))
	f.Add(enc(&frame{Op: opInput, Data: []byte("\x1b[A\x00\xff")}, &frame{Op: opWinsize, Body: json.RawMessage(`{"rows":0,"cols":70000}`)}))
	f.Add(enc(&frame{ID: 9, Op: opReply, Error: &wireError{Kind: "not_found", Message: "x"}}))
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, '{'})
	f.Add([]byte{0, 0, 0, 9, '{', '"', 'o', 'p', '"', ':', '1', '}', 0})
	const max = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for range 32 {
			before := r.Len()
			fr, err := readFrame(r, max)
			if err != nil {
				if before >= 4 && binary.BigEndian.Uint32(data[len(data)-before:]) > max && !errors.Is(err, errFrameTooBig) {
					t.Fatalf("a frame over the limit gave %v", err)
				}
				return
			}
			if consumed := before - r.Len(); consumed > max+4 {
				t.Fatalf("read %d bytes for one frame, limit %d", consumed, max)
			}
			var b bytes.Buffer
			if err := writeFrame(&b, fr); err != nil {
				t.Fatalf("re-encoding %+v: %v", fr, err)
			}
			back, err := readFrame(&b, 4*max+64)
			if err != nil {
				t.Fatalf("reading back %+v: %v", fr, err)
			}
			if back.ID != fr.ID || back.Op != fr.Op || !bytes.Equal(back.Data, fr.Data) ||
				!sameJSON(back.Body, fr.Body) || (back.Error == nil) != (fr.Error == nil) ||
				fr.Error != nil && *back.Error != *fr.Error {
				t.Fatalf("round trip changed the frame:\n%+v\n%+v", fr, back)
			}
			// What the server and the client do with a frame's parts.
			var h hello
			if strictDecode(fr.Body, &h) == nil && h.Caller != nil {
				h.Caller.Check()
			}
			for _, v := range []any{&session.ExecRequest{}, &session.WriteRequest{}, &session.ReadRequest{},
				&session.KillRequest{}, &session.ResizeRequest{}, &winsize{}, &byeBody{}, &endBody{}} {
				strictDecode(fr.Body, v)
			}
			if fr.Error != nil {
				if err := fromWire(fr.Error); err == nil || err.Error() != fr.Error.Message {
					t.Fatalf("fromWire(%+v) = %v", fr.Error, err)
				}
			}
		}
	})
}

// sameJSON compares two raw JSON values by meaning (absent and empty are equal):
// encoding may escape characters differently (json.Marshal writes & as \u0026).
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
