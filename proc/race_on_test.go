//go:build race

package proc

// raceOn: the race detector's instrumentation of system calls moves buffers passed to
// read(2) to the heap.
const raceOn = true
