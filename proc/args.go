package proc

import (
	"bytes"
	"encoding/binary"
	"strings"
)

// The parsers of the BSD backends, in a file of every build so they are tested on Linux.

// bsdState maps p_stat / ki_stat (SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5, SWAIT 6,
// SLOCK 7) to the letters of Info.State.
func bsdState(s int8) byte {
	switch s {
	case 3:
		return 'S'
	case 4:
		return 'T'
	case 5:
		return 'Z'
	case 6:
		return 'I'
	case 7:
		return 'D'
	}
	return 'R'
}

// splitArgs parses a KERN_PROCARGS2 block: argc (int32), the executable path, NUL
// padding, argc arguments, then the environment, each NUL-terminated. argcKnown is false
// for blocks without the leading argc (FreeBSD's kern.proc.args and kern.proc.env),
// which are plain NUL-separated lists.
func splitArgs(b []byte, argcKnown bool) (argv, env [][]byte) {
	if !argcKnown {
		return bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}), nil
	}
	if len(b) < 4 {
		return nil, nil
	}
	argc := int(binary.NativeEndian.Uint32(b))
	b = b[4:]
	i := bytes.IndexByte(b, 0) // the executable path
	if i < 0 {
		return nil, nil
	}
	b = b[i:]
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	for _, s := range bytes.Split(b, []byte{0}) {
		if len(argv) < argc {
			argv = append(argv, s)
			continue
		}
		if len(s) == 0 {
			break
		}
		env = append(env, s)
	}
	return argv, env
}

func joinArgs(argv [][]byte) string {
	var sb strings.Builder
	for i, a := range argv {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.Write(a)
	}
	return sb.String()
}
