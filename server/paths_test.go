package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareDir: the socket directory is created 0700, and a directory that another user
// planted, a symlink, a file, or (for default paths) a directory others can enter is
// refused (EDGE-CASES 77).
func TestPrepareDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, f func(p string) error) string {
		p := filepath.Join(base, name)
		if err := f(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ours := mk("ours", func(p string) error { return os.Mkdir(p, 0o700) })
	cases := []struct {
		name    string
		dir     string
		strict  bool
		wantErr string
	}{
		{"created", filepath.Join(base, "new"), true, ""},
		{"ours 0700", ours, true, ""},
		{"symlink", mk("link", func(p string) error { return os.Symlink(ours, p) }), true, "symbolic link"},
		{"file", mk("file", func(p string) error { return os.WriteFile(p, nil, 0o600) }), true, "not a directory"},
		{"loose mode", mk("loose", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.Chmod(p, 0o755)
		}), true, "must be 0700"},
		{"loose mode, explicit path", filepath.Join(base, "loose"), false, ""},
	}
	if os.Getuid() == 0 { // as root, plant a directory owned by nobody
		cases = append(cases, struct {
			name    string
			dir     string
			strict  bool
			wantErr string
		}{"other user's", mk("theirs", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.Chown(p, 65534, 65534)
		}), true, "belongs to uid 65534"})
	}
	for _, c := range cases {
		err := prepareDir(c.dir, c.strict)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.wantErr)
		}
	}
	if fi, err := os.Stat(filepath.Join(base, "new")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("created directory: %v %v", fi.Mode(), err)
	}
}
