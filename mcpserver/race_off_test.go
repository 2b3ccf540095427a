//go:build !race

package mcpserver

// raceOn: see race_on_test.go.
const raceOn = false
