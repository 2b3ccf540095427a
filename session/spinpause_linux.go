package session

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// spinPauseFor is how long one pause of the looks' spin sleeps (the kernel adds its
// timer slack, 50 µs by default).
const spinPauseFor = 20_000 // ns

// spinPause pauses the looks' spin between two checks (lookSchedule.look): the thread
// sleeps for spinPauseFor in nanosleep(2), leaving the CPU to the program being looked
// at (on two loaded CPUs, a spin that only yields to Go keeps it from the CPU it needs
// to reach its read), then yields to the goroutines queued behind it (the session's
// reader among them). A Go timer cannot pause this briefly: an idle process's timer
// fires no sooner than a millisecond later.
func spinPause() {
	_ = unix.Nanosleep(&unix.Timespec{Nsec: spinPauseFor}, nil)
	runtime.Gosched()
}
