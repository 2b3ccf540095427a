//go:build race

package ptyhub_test

// floodScale divides the flood tests' sizes: the race detector makes the recorder's
// per-byte work several times slower, and the tests must still end in minutes.
const floodScale = 8
