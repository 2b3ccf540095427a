//go:build !race

package proc

const raceOn = false
