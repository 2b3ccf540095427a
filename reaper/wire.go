package reaper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// The manager and its reaper talk over a SOCK_SEQPACKET socket pair (a SOCK_STREAM one on
// the portable paths: macOS has no AF_UNIX SOCK_SEQPACKET). A message is encoded as
// below (both ends are the same binary), split into packets of at most maxPacket bytes;
// the first byte of each packet says whether more follow. On a stream each packet is
// preceded by its length (4 bytes, big-endian). File descriptors ride on the last packet.
//
// A message is a list of fields, each a tag byte (fXxx) and its value: an integer as a
// varint, a string as a uvarint length and its bytes, a list of strings as a uvarint count
// and its strings, a list of survivors as a count and each one's pid and command; a true
// bool is its tag alone. Fields at their zero value are left out. Encoding appends to a
// buffer the sender keeps (no allocation); decoding a spawn makes one string of all of
// its program's arguments and environment.
const maxPacket = 32 << 10

// msg is every message of the protocol, in both directions.
type msg struct {
	ID uint64
	Op string

	// spawn
	Path string
	Argv []string
	Env  []string
	Dir  string
	Ctty bool
	Tag  string
	Hold bool

	// kill, signal, exit
	Pid     int
	Sig     int
	Wait    bool
	GraceMs int
	Status  int

	// replies
	Err       string
	Errno     int
	Survivors []Survivor
	// Spawner (spawn replies): the reaper's thread that forks every leader.
	Spawner int
}

const (
	opSpawn    = "spawn"
	opKill     = "kill"
	opSignal   = "signal"
	opShutdown = "shutdown"
	opRelease  = "release"
	opReply    = "reply"
	opExit     = "exit"
)

// The field tags of the encoding.
const (
	fID byte = iota + 1
	fOp
	fPath
	fArgv
	fEnv
	fDir
	fCtty
	fTag
	fHold
	fPid
	fSig
	fWait
	fGraceMs
	fStatus
	fErr
	fErrno
	fSurvivors
	fSpawner
)

// appendMsg appends the encoding of m to b.
func appendMsg(b []byte, m *msg) []byte {
	str := func(b []byte, tag byte, s string) []byte {
		if s == "" {
			return b
		}
		b = binary.AppendUvarint(append(b, tag), uint64(len(s)))
		return append(b, s...)
	}
	num := func(b []byte, tag byte, v int64) []byte {
		if v == 0 {
			return b
		}
		return binary.AppendVarint(append(b, tag), v)
	}
	flag := func(b []byte, tag byte, v bool) []byte {
		if !v {
			return b
		}
		return append(b, tag)
	}
	list := func(b []byte, tag byte, l []string) []byte {
		if len(l) == 0 {
			return b
		}
		b = binary.AppendUvarint(append(b, tag), uint64(len(l)))
		for _, s := range l {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		return b
	}
	if m.ID != 0 {
		b = binary.AppendUvarint(append(b, fID), m.ID)
	}
	b = str(b, fOp, m.Op)
	b = str(b, fPath, m.Path)
	b = list(b, fArgv, m.Argv)
	b = list(b, fEnv, m.Env)
	b = str(b, fDir, m.Dir)
	b = flag(b, fCtty, m.Ctty)
	b = str(b, fTag, m.Tag)
	b = flag(b, fHold, m.Hold)
	b = num(b, fPid, int64(m.Pid))
	b = num(b, fSig, int64(m.Sig))
	b = flag(b, fWait, m.Wait)
	b = num(b, fGraceMs, int64(m.GraceMs))
	b = num(b, fStatus, int64(m.Status))
	b = str(b, fErr, m.Err)
	b = num(b, fErrno, int64(m.Errno))
	if len(m.Survivors) > 0 {
		b = binary.AppendUvarint(append(b, fSurvivors), uint64(len(m.Survivors)))
		for _, s := range m.Survivors {
			b = binary.AppendVarint(b, int64(s.PID))
			b = binary.AppendUvarint(b, uint64(len(s.Command)))
			b = append(b, s.Command...)
		}
	}
	b = num(b, fSpawner, int64(m.Spawner))
	return b
}

// errBadMsg is a message that does not decode: the peer is not this binary's reaper or
// manager, or the packets were cut.
var errBadMsg = errors.New("reaper: decode: malformed message")

// parseMsg decodes a message appendMsg encoded. It keeps no reference to data.
func parseMsg(data []byte) (*msg, error) {
	m := new(msg)
	// The arguments and environment of a spawn are substrings of one copy of their
	// bytes (they live as long as the spawn); every other string is its own copy, so
	// that a tag or a command kept for long does not hold the whole message.
	var lists string // data as a string, made by the first list
	p := 0
	bad := false
	uv := func() uint64 {
		v, n := binary.Uvarint(data[p:])
		if n <= 0 {
			bad = true
			return 0
		}
		p += n
		return v
	}
	sv := func() int {
		v, n := binary.Varint(data[p:])
		if n <= 0 {
			bad = true
			return 0
		}
		p += n
		return int(v)
	}
	// span returns the bounds of the next length-prefixed string.
	span := func() (int, int) {
		l := uv()
		if bad || l > uint64(len(data)-p) {
			bad = true
			return p, p
		}
		i := p
		p += int(l)
		return i, p
	}
	str := func() string { i, j := span(); return string(data[i:j]) }
	list := func() []string {
		n := uv()
		if bad || n > uint64(len(data)-p) { // each string takes a byte at least
			bad = true
			return nil
		}
		if lists == "" {
			lists = string(data)
		}
		l := make([]string, n)
		for k := range l {
			i, j := span()
			l[k] = lists[i:j]
		}
		return l
	}
	for p < len(data) && !bad {
		tag := data[p]
		p++
		switch tag {
		case fID:
			m.ID = uv()
		case fOp:
			m.Op = str()
		case fPath:
			m.Path = str()
		case fArgv:
			m.Argv = list()
		case fEnv:
			m.Env = list()
		case fDir:
			m.Dir = str()
		case fCtty:
			m.Ctty = true
		case fTag:
			m.Tag = str()
		case fHold:
			m.Hold = true
		case fPid:
			m.Pid = sv()
		case fSig:
			m.Sig = sv()
		case fWait:
			m.Wait = true
		case fGraceMs:
			m.GraceMs = sv()
		case fStatus:
			m.Status = sv()
		case fErr:
			m.Err = str()
		case fErrno:
			m.Errno = sv()
		case fSurvivors:
			n := uv()
			if bad || n > uint64(len(data)-p) {
				bad = true
				break
			}
			m.Survivors = make([]Survivor, n)
			for k := range m.Survivors {
				m.Survivors[k] = Survivor{PID: sv(), Command: str()}
			}
		case fSpawner:
			m.Spawner = sv()
		default:
			bad = true
		}
	}
	if bad {
		return nil, errBadMsg
	}
	return m, nil
}

// send writes m and fds to c. buf is the sender's scratch buffer, reused from one
// message to the next (the caller holds the lock that serialises its messages); a
// message that fits one packet is sent from it with no other copy.
func send(c *net.UnixConn, buf *[]byte, m *msg, fds []int) error {
	hdr := 1
	if streamWire {
		hdr = 5
	}
	var room [5]byte
	b := appendMsg(append((*buf)[:0], room[:hdr]...), m) // the packet's header, then m
	if cap(b) <= 64<<10 {
		*buf = b[:0] // kept for the next message; a huge one is not
	}
	data := b[hdr:]
	if len(data) <= maxPacket-1 {
		return writePacket(c, b, 0, fds)
	}
	pkt := make([]byte, hdr+maxPacket-1)
	for {
		chunk := data
		more := byte(0)
		if len(chunk) > maxPacket-1 {
			chunk, more = chunk[:maxPacket-1], 1
		}
		data = data[len(chunk):]
		n := copy(pkt[hdr:], chunk)
		var f []int
		if more == 0 {
			f = fds
		}
		if err := writePacket(c, pkt[:hdr+n], more, f); err != nil {
			return err
		}
		if more == 0 {
			return nil
		}
	}
}

// writePacket sends pkt, whose first bytes (1, or 5 on a stream) are left for its
// header: the length on a stream, then more (1 when more packets of the message follow).
// fds ride on it.
func writePacket(c *net.UnixConn, pkt []byte, more byte, fds []int) error {
	i := 0
	if streamWire {
		binary.BigEndian.PutUint32(pkt, uint32(len(pkt)-4))
		i = 4
	}
	pkt[i] = more
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	n, _, err := c.WriteMsgUnix(pkt, oob, nil)
	if err == nil && n < len(pkt) { // a stream may take part of it
		_, err = c.Write(pkt[n:])
	}
	if err != nil {
		return fmt.Errorf("reaper: send: %w", err)
	}
	return nil
}

// recv reads one message and the fds attached to it (close-on-exec).
func recv(c *net.UnixConn, buf, oob []byte) (*msg, []int, error) {
	var data []byte
	var fds []int
	// read fills p (one packet on a seqpacket socket; exactly len(p) bytes on a stream),
	// collecting the fds that arrive with it.
	read := func(p []byte) (int, error) {
		got := 0
		for {
			n, oobn, _, _, err := c.ReadMsgUnix(p[got:], oob)
			if err != nil {
				return got, err
			}
			if oobn > 0 {
				scms, err := unix.ParseSocketControlMessage(oob[:oobn])
				if err == nil {
					for _, scm := range scms {
						if f, err := unix.ParseUnixRights(&scm); err == nil {
							fds = append(fds, f...)
						}
					}
				}
			}
			got += n
			if !streamWire || n == 0 || got == len(p) {
				return got, nil
			}
		}
	}
	for {
		var n int
		var err error
		if streamWire {
			var hdr [4]byte
			if n, err = read(hdr[:]); err == nil && n == 4 {
				size := int(binary.BigEndian.Uint32(hdr[:]))
				if size < 1 || size > len(buf) {
					closeAll(fds)
					return nil, nil, fmt.Errorf("reaper: bad packet length %d", size)
				}
				n, err = read(buf[:size])
				if err == nil && n < size {
					n = 0 // closed mid-packet
				}
			} else if err == nil {
				n = 0
			}
		} else {
			n, err = read(buf)
		}
		if err != nil {
			closeAll(fds)
			return nil, nil, err
		}
		if n == 0 {
			closeAll(fds)
			return nil, nil, fmt.Errorf("reaper: peer closed")
		}
		if buf[0] == 0 && data == nil {
			data = buf[1:n] // the whole message in one packet: decoded in place
			break
		}
		data = append(data, buf[1:n]...)
		if buf[0] == 0 {
			break
		}
	}
	m, err := parseMsg(data)
	if err != nil {
		closeAll(fds)
		return nil, nil, err
	}
	return m, fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
