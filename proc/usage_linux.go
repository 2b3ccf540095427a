package proc

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of CPU times in /proc/PID/stat (USER_HZ, 100 on every Linux
// architecture Go supports).
const clockTick = 10 * time.Millisecond

func usage(pids []int) (cpu time.Duration, rss int64) {
	page := int64(os.Getpagesize())
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces and parentheses).
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		// f[0] is field 3 (state): utime is field 14, stime 15, rss 24.
		if len(f) < 22 {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		rs, _ := strconv.ParseInt(f[21], 10, 64)
		cpu += time.Duration(ut+st) * clockTick
		rss += rs * page
	}
	return cpu, rss
}

func listeningSockets() Sockets {
	out := Sockets{}
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
			fl := strings.Fields(sc.Text())
			if len(fl) < 10 || fl[3] != "0A" { // 0A: TCP_LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fl[1], ":")
			if !ok {
				continue
			}
			port, err1 := strconv.ParseUint(hexPort, 16, 16)
			inode, err2 := strconv.ParseUint(fl[9], 10, 64)
			if err1 == nil && err2 == nil && inode != 0 {
				out[inode] = int(port)
			}
		}
		f.Close()
	}
	return out
}

func ports(pids []int, socks Sockets) []int {
	if len(socks) == 0 {
		return nil
	}
	var out []int
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			l, err := os.Readlink(dir + e.Name())
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			inode, err := strconv.ParseUint(strings.TrimSuffix(l[len("socket:["):], "]"), 10, 64)
			if err != nil {
				continue
			}
			if p, ok := socks[inode]; ok && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

func selfRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
