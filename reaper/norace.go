//go:build !race

package reaper

// raceBuild says whether this binary is built with the race detector (see helperEnviron).
const raceBuild = false
