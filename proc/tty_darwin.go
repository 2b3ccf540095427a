package proc

import (
	"bytes"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

func terminalPath(fd int) (string, error) {
	var buf [unix.PathMax]byte
	if _, _, e := unix.Syscall(unix.SYS_FCNTL, uintptr(fd), unix.F_GETPATH, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		return "", e
	}
	p := string(buf[:bytes.IndexByte(buf[:], 0)])
	if len(p) < 5 || p[:5] != "/dev/" {
		return "", fmt.Errorf("fd %d is %s, not a terminal device", fd, p)
	}
	return p, nil
}
