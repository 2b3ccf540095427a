//go:build !linux

// Command ptyhub-stress is the bounded adversarial campaign (see main.go); its scenarios
// read /proc and set Linux resource limits, so it runs on Linux only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "ptyhub-stress: runs on Linux only")
	os.Exit(2)
}
