//go:build race

package mcpserver

// raceOn: the race detector drops a quarter of what sync.Pool is given, so pooled
// buffers (encoding/json's) are made again and allocation counts are not the program's.
const raceOn = true
