package session

import (
	"regexp"
	"testing"
)

// TestEnvKey: the loop accepts exactly the names the POSIX-style pattern does.
func TestEnvKey(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	names := []string{"", "A", "_", "a1", "1a", "PATH", "MY_VAR_2", "_9", "9", "A-B", "A B", "A=B",
		"é", "A\x00", "Z", "z", "[", "`", "{", "@", "/", ":", "0", "__", "a.b", "ÿA"}
	for c := 0; c < 256; c++ {
		names = append(names, string(rune(c)), "A"+string([]byte{byte(c)}), string([]byte{byte(c)})+"A")
	}
	for _, k := range names {
		if got, want := envKey(k), re.MatchString(k); got != want {
			t.Errorf("envKey(%q) = %v, want %v", k, got, want)
		}
	}
}
