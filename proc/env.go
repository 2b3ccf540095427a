package proc

import "bytes"

// lookupEnv finds key in a NUL-separated environment block ("K=V\x00K=V…").
func lookupEnv(block []byte, key string) (string, bool) {
	for len(block) > 0 {
		var kv []byte
		kv, block, _ = bytes.Cut(block, []byte{0})
		if len(kv) > len(key) && kv[len(key)] == '=' && string(kv[:len(key)]) == key {
			return string(kv[len(key)+1:]), true
		}
	}
	return "", false
}
