//go:build !linux

package session

// Without Linux's /proc there is no kernel view of what the foreground program waits
// for. The documented fallback is to never report waiting_for_input: calls return at
// exit, pattern or deadline, as they would for a program that is busy (a prompt-regex or
// output-quiet guess would return early for `sleep 5`, which is worse).

// waitState is empty: nothing is cached.
type waitState struct{}

type waitVerdict uint8

const (
	waitNo waitVerdict = iota
	waitYes
	waitMaybe
)

const methodQuiet = "quiet"

// waitDetectionAvailable says whether this platform has the kernel-based detector.
const waitDetectionAvailable = false

// probeWait never reports waiting on this platform.
func (s *Session) probeWait() (waitVerdict, string) { return waitNo, "" }

// readerAhead cannot tell on this platform: input is never held.
func (s *Session) readerAhead(*waitState) bool { return false }
