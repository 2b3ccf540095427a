package proc

import (
	"os"
	"syscall"
)

func executable() string { return "/proc/self/exe" }

func executableReplaced() bool {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return false
	}
	if st.Nlink == 0 {
		return true
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return false
	}
	var cur syscall.Stat_t
	return syscall.Stat(exe, &cur) != nil || cur.Ino != st.Ino || cur.Dev != st.Dev
}

func openFDs() []int { return fdsIn("/proc/self/fd") }
