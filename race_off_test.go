//go:build !race

package ptyhub_test

// floodScale divides the flood tests' sizes (see race_on_test.go).
const floodScale = 1
