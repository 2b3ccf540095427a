package proc

// TerminalPath returns the path of the terminal device open on fd (such as /dev/pts/3),
// so that a caller can open the same terminal anew, with flags of its own (non-blocking)
// that the shell sharing fd's open file would not see. It reads the kernel's name of the
// file on Linux (/proc/self/fd), fcntl(F_GETPATH) on macOS; on FreeBSD (and on Linux in
// a ptyhub_portable build, so that this path runs in tests) it answers /dev/tty when fd
// is the caller's controlling terminal (TIOCGSID). An error when fd is not a terminal or
// its path cannot be told.
func TerminalPath(fd int) (string, error) { return terminalPath(fd) }
