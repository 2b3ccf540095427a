package transcript

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ptyhub/ptyhub/termtext"
)

// Event is one event of a transcript.
type Event struct {
	Time float64 // seconds since the start
	Code string  // "o", "i", "r" or "m"
	Data string
}

// followPoll is how often a following Reader looks for more of a live file.
const followPoll = 50 * time.Millisecond

// Reader reads a transcript event by event. It is not safe for concurrent use.
type Reader struct {
	f      *os.File
	br     *bufio.Reader
	h      Header
	ctx    context.Context // non-nil: follow the file as it grows
	part   []byte          // an unfinished last line, kept while following
	ended  bool
	endMsg string
	final  bool // following, no writer holds the file any more: its end is the end
}

// Open opens the transcript at path and reads its header.
func Open(path string) (*Reader, error) { return open(path, false, context.Background()) }

// OpenFollow is Open for a transcript that may still be written: at the end
// of the file Next waits for more until the end marker (EndPrefix) was read,
// which makes Next return io.EOF, or ctx is done, which makes it return
// ctx.Err(). It polls the file every 50 ms while waiting. A file no writer holds
// (its flock is free: the writer closed it, or its process died) will not grow: its
// end is then the end, with or without the marker (a transcript a full disk stopped,
// one a crash cut short, one of a session long gone).
func OpenFollow(ctx context.Context, path string) (*Reader, error) { return open(path, true, ctx) }

func open(path string, follow bool, ctx context.Context) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	r := &Reader{f: f, br: bufio.NewReaderSize(f, 64<<10)}
	if follow {
		r.ctx = ctx
	}
	line, err := r.line()
	if err != nil {
		f.Close()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("transcript: %s: header: %w", path, err)
	}
	if err := json.Unmarshal(line, &r.h); err != nil || r.h.Version != 2 {
		f.Close()
		return nil, fmt.Errorf("transcript: %s is not an asciicast v2 file", path)
	}
	return r, nil
}

// Header returns the file's header.
func (r *Reader) Header() Header { return r.h }

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// Ended returns the status of the end marker ("exited with code 0", …) once
// Next has read it.
func (r *Reader) Ended() (status string, ok bool) { return r.endMsg, r.ended }

// Next returns the next event, io.EOF at the end (for a following reader:
// after the end marker). Lines that are not events (a line cut short by a
// crash or a full disk) are skipped.
func (r *Reader) Next() (Event, error) {
	for {
		if r.ended && r.ctx != nil {
			return Event{}, io.EOF
		}
		line, err := r.line()
		if err != nil {
			return Event{}, err
		}
		ev, ok := parseEvent(line)
		if !ok {
			continue
		}
		if ev.Code == "m" && strings.HasPrefix(ev.Data, EndPrefix) {
			r.ended = true
			r.endMsg = strings.TrimSuffix(strings.TrimPrefix(ev.Data, EndPrefix), "]")
		}
		return ev, nil
	}
}

// line returns the next complete line without its newline. Following, it
// waits for the rest of an unfinished line.
func (r *Reader) line() ([]byte, error) {
	for {
		b, err := r.br.ReadSlice('\n')
		if err == nil {
			if len(r.part) > 0 {
				r.part = append(r.part, b[:len(b)-1]...)
				line := r.part
				r.part = r.part[:0:0]
				return line, nil
			}
			return b[:len(b)-1], nil
		}
		r.part = append(r.part, b...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != io.EOF {
			return nil, err
		}
		if r.ctx != nil && !r.final && !r.writerHolds() {
			// No writer: what it wrote before it let go is read to the end, then
			// nothing more comes.
			r.final = true
			continue
		}
		if r.ctx == nil || r.final {
			if len(r.part) > 0 { // a last line without newline
				line := r.part
				r.part = nil
				return line, nil
			}
			return nil, io.EOF
		}
		t := time.NewTimer(followPoll)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return nil, r.ctx.Err()
		case <-t.C:
		}
	}
}

// writerHolds reports whether a writer may still hold the file (Create's flock), which
// may then still grow: false only when the lock is free. It takes a shared lock for a
// moment when it is.
func (r *Reader) writerHolds() bool {
	if flock(r.f, syscall.LOCK_SH|syscall.LOCK_NB) != nil {
		return true // held (EWOULDBLOCK), or no answer: follow as if held
	}
	flock(r.f, syscall.LOCK_UN)
	return false
}

func parseEvent(line []byte) (Event, bool) {
	var raw [3]json.RawMessage
	var arr []json.RawMessage
	if err := json.Unmarshal(line, &arr); err != nil || len(arr) != 3 {
		return Event{}, false
	}
	copy(raw[:], arr)
	var ev Event
	if json.Unmarshal(raw[0], &ev.Time) != nil || json.Unmarshal(raw[1], &ev.Code) != nil ||
		json.Unmarshal(raw[2], &ev.Data) != nil {
		return Event{}, false
	}
	return ev, true
}

// OutputOptions select what Output returns.
type OutputOptions struct {
	// Follow waits for more output of a live transcript until its end marker
	// (or the context ends).
	Follow bool
	// Markers adds each "m" event (hidden input, exit, …) on a line of its own.
	Markers bool
	// Text converts the output to the text view (termtext): escape sequences
	// removed, carriage-return overwrites collapsed. Otherwise the bytes are
	// the output as recorded (see the package doc on invalid UTF-8).
	Text bool
}

// Output returns the output recorded in the transcript at path: the data of
// its "o" events in order. With o.Follow, reads wait for more until the end
// marker, then return io.EOF; when ctx ends they return ctx.Err(). ctx is
// only used with Follow. The caller closes the result.
func Output(ctx context.Context, path string, o OutputOptions) (io.ReadCloser, error) {
	var r *Reader
	var err error
	if o.Follow {
		r, err = OpenFollow(ctx, path)
	} else {
		r, err = Open(path)
	}
	if err != nil {
		return nil, err
	}
	return &outputReader{r: r, o: o, nl: true}, nil
}

type outputReader struct {
	r    *Reader
	o    OutputOptions
	conv termtext.Converter
	buf  []byte
	nl   bool // the output so far ends at a line start
	err  error
}

func (or *outputReader) Read(p []byte) (int, error) {
	for len(or.buf) == 0 {
		if or.err != nil {
			return 0, or.err
		}
		ev, err := or.r.Next()
		if err != nil {
			or.err = err
			if or.o.Text && err == io.EOF {
				or.buf = or.conv.Close(or.buf[:0])
			}
			continue
		}
		var add []byte
		switch {
		case ev.Code == "o":
			add = []byte(ev.Data)
		case ev.Code == "m" && or.o.Markers:
			if !or.nl {
				add = append(add, "\r\n"...)
			}
			add = append(add, ev.Data...)
			add = append(add, "\r\n"...)
		default:
			continue
		}
		if len(add) > 0 {
			or.nl = add[len(add)-1] == '\n'
		}
		if or.o.Text {
			or.buf = or.conv.Write(or.buf[:0], add)
			if or.o.Follow {
				or.buf = or.conv.Flush(or.buf)
			}
		} else {
			or.buf = add
		}
	}
	n := copy(p, or.buf)
	or.buf = or.buf[n:]
	return n, nil
}

func (or *outputReader) Close() error { return or.r.Close() }

// Info describes one transcript file.
type Info struct {
	UUID    string
	Path    string
	Size    int64
	ModTime time.Time
	Header  Header
	// Live: a writer holds the file (the session is being recorded now).
	Live bool
	// Ended is the status of the end marker, "" when the transcript is not
	// finished (live, or its server crashed).
	Ended string
}

// List describes the transcripts in dir (a SessionsDir), oldest first (UUIDs
// are v7: they sort by creation time). A missing dir is an empty list. Files
// that are not readable transcripts are left out.
func List(dir string) ([]Info, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	var out []Info
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, Ext) || !e.Type().IsRegular() {
			continue
		}
		in, err := Stat(dir + "/" + name)
		if err != nil {
			continue
		}
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UUID < out[j].UUID })
	return out, nil
}

// Stat describes the transcript at path: header, size, whether it is live, and
// its end status (read from the file's last 4 KiB).
func Stat(path string) (Info, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return Info{}, fmt.Errorf("transcript: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Info{}, fmt.Errorf("transcript: %w", err)
	}
	base := fi.Name()
	in := Info{UUID: strings.TrimSuffix(base, Ext), Path: path, Size: fi.Size(), ModTime: fi.ModTime()}
	br := bufio.NewReader(f)
	head, err := br.ReadSlice('\n')
	if err != nil || json.Unmarshal(head, &in.Header) != nil || in.Header.Version != 2 {
		return Info{}, fmt.Errorf("transcript: %s is not an asciicast v2 file", path)
	}
	in.Live = errors.Is(flock(f, syscall.LOCK_SH|syscall.LOCK_NB), syscall.EWOULDBLOCK)
	tail := make([]byte, min(fi.Size(), 4096))
	if n, _ := f.ReadAt(tail, fi.Size()-int64(len(tail))); n == len(tail) {
		tail = bytes.TrimRight(tail, "\n")
		if i := bytes.LastIndexByte(tail, '\n'); i >= 0 {
			if ev, ok := parseEvent(tail[i+1:]); ok && ev.Code == "m" && strings.HasPrefix(ev.Data, EndPrefix) {
				in.Ended = strings.TrimSuffix(strings.TrimPrefix(ev.Data, EndPrefix), "]")
			}
		}
	}
	return in, nil
}

// Find returns the transcript in dir whose UUID is id or starts with id, or, when id is
// a number, the newest whose short session id it is, or else the newest of a session
// named id; an ambiguous prefix or no match is an error.
func Find(dir, id string) (Info, error) {
	in, err := findID(dir, id)
	if err == nil {
		return in, nil
	}
	name := strings.TrimSpace(id)
	all, lerr := List(dir)
	if lerr != nil {
		return Info{}, lerr
	}
	for i := len(all) - 1; i >= 0; i-- { // newest first (List is oldest first)
		if name != "" && all[i].Header.Name == name {
			return all[i], nil
		}
	}
	return Info{}, err
}

// findID is Find by UUID, UUID prefix or short id.
func findID(dir, id string) (Info, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if n, err := strconv.Atoi(id); err == nil && n > 0 && id[0] != '0' { // UUIDv7 prefixes begin with 0
		all, err := List(dir)
		if err != nil {
			return Info{}, err
		}
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].Header.SessionID == n {
				return all[i], nil
			}
		}
		return Info{}, fmt.Errorf("transcript: no transcript of session %d in %s", n, dir)
	}
	if !validUUID(id) {
		return Info{}, fmt.Errorf("transcript: bad session id %q", id)
	}
	if in, err := Stat(Path(dir, id)); err == nil {
		return in, nil
	}
	all, err := List(dir)
	if err != nil {
		return Info{}, err
	}
	var found []Info
	for _, in := range all {
		if strings.HasPrefix(in.UUID, id) {
			found = append(found, in)
		}
	}
	switch len(found) {
	case 0:
		return Info{}, fmt.Errorf("transcript: no transcript of session %q in %s", id, dir)
	case 1:
		return found[0], nil
	}
	return Info{}, fmt.Errorf("transcript: session id prefix %q is ambiguous (%d transcripts)", id, len(found))
}
