//go:build !linux || ptyhub_portable

package proc

import "errors"

// Without the kernel's view of blocked threads every answer is "cannot tell".

const syscallView = false

func (r *Reader) threadBlocked(int, int) Blocked { return Blocked{Call: CallUnknown} }

func (r *Reader) threadRuntime(int, int) (uint64, bool) { return 0, false }

func fdOf(int, int) FD { return FD{Kind: FDUnknown} }

func fdsOf(int) ([]FD, bool) { return nil, false }

func ptyPeer(int, int) (uint64, bool) { return 0, false }

func (r *Reader) dupFD(int, int) (int, error) {
	return -1, errors.New("proc: another process's fds cannot be copied on this platform")
}
