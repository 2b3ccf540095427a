//go:build ptyhub_portable

package testtool

// Portable is true in a build with the ptyhub_portable tag: Linux running the paths macOS
// and FreeBSD run (no subreaper, no pidfd, no /proc wait channels).
const Portable = true
