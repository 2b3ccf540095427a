package reaper

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// The manager and its reaper talk over a SOCK_SEQPACKET socket pair (a SOCK_STREAM one on
// the portable paths: macOS has no AF_UNIX SOCK_SEQPACKET). A message is JSON, split into
// packets of at most maxPacket bytes; the first byte of each packet says whether more
// follow. On a stream each packet is preceded by its length (4 bytes, big-endian).
// File descriptors ride on the last packet.
const maxPacket = 32 << 10

// msg is every message of the protocol, in both directions.
type msg struct {
	ID uint64 `json:"id,omitempty"`
	Op string `json:"op"`

	// spawn
	Path string   `json:"path,omitempty"`
	Argv []string `json:"argv,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	Ctty bool     `json:"ctty,omitempty"`
	Tag  string   `json:"tag,omitempty"`
	Hold bool     `json:"hold,omitempty"`

	// kill, signal, exit
	Pid     int  `json:"pid,omitempty"`
	Sig     int  `json:"sig,omitempty"`
	Wait    bool `json:"wait,omitempty"`
	GraceMs int  `json:"grace_ms,omitempty"`
	Status  int  `json:"status,omitempty"`

	// replies
	Err       string     `json:"err,omitempty"`
	Errno     int        `json:"errno,omitempty"`
	Survivors []Survivor `json:"survivors,omitempty"`
	// Spawner (spawn replies): the reaper's thread that forks every leader.
	Spawner int `json:"spawner,omitempty"`
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

func send(c *net.UnixConn, m *msg, fds []int) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("reaper: encode: %w", err)
	}
	pkt := make([]byte, 0, min(len(data)+1, maxPacket))
	for {
		chunk := data
		more := byte(0)
		if len(chunk) > maxPacket-1 {
			chunk, more = chunk[:maxPacket-1], 1
		}
		data = data[len(chunk):]
		pkt = pkt[:0]
		if streamWire {
			pkt = binary.BigEndian.AppendUint32(pkt, uint32(len(chunk)+1))
		}
		pkt = append(append(pkt, more), chunk...)
		var oob []byte
		if more == 0 && len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		n, _, err := c.WriteMsgUnix(pkt, oob, nil)
		if err == nil && n < len(pkt) { // a stream may take part of it
			_, err = c.Write(pkt[n:])
		}
		if err != nil {
			return fmt.Errorf("reaper: send: %w", err)
		}
		if more == 0 {
			return nil
		}
	}
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
		data = append(data, buf[1:n]...)
		if buf[0] == 0 {
			break
		}
	}
	m := new(msg)
	if err := json.Unmarshal(data, m); err != nil {
		closeAll(fds)
		return nil, nil, fmt.Errorf("reaper: decode: %w", err)
	}
	return m, fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
