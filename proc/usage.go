package proc

import "time"

// Usage sums the CPU time (user + system) and resident memory of pids. Processes that
// vanish while it reads count as nothing. Zero where the OS backend has no such facts.
func Usage(pids []int) (cpu time.Duration, rss int64) { return usage(pids) }

// Sockets maps the inode of each listening TCP socket of this network namespace to its
// local port; read it once for many Ports calls.
type Sockets map[uint64]int

// ListeningSockets reads the listening TCP sockets (IPv4 and IPv6); empty where the OS
// backend cannot tell.
func ListeningSockets() Sockets { return listeningSockets() }

// Ports returns the ports of socks that one of pids holds open, sorted, without
// duplicates.
func Ports(pids []int, socks Sockets) []int { return ports(pids, socks) }

// SelfRSS is this process's resident set size, 0 where unknown.
func SelfRSS() int64 { return selfRSS() }

// Descendants returns pid and the processes below it (breadth first), at most max.
func Descendants(pid, max int) []int {
	out := []int{pid}
	seen := map[int]bool{pid: true}
	for i := 0; i < len(out) && len(out) < max; i++ {
		for _, c := range Children(out[i]) {
			if !seen[c] && len(out) < max {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}
