//go:build linux && !ptyhub_portable

package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

func terminalPath(fd int) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(p, "/dev/") {
		return "", fmt.Errorf("fd %d is %s, not a terminal device", fd, p)
	}
	return p, nil
}
