//go:build !linux

package session

import "time"

// Without /proc the listing has no process facts: CPU, memory and ports stay empty.

func procUsage(pids []int) (time.Duration, int64) { return 0, 0 }

func listenSockets() map[uint64]int { return nil }

func listenPorts(pids []int, socks map[uint64]int) []int { return nil }

func descendants(pid, max int) []int { return []int{pid} }
