package server

import (
	"bytes"
	"debug/elf"
	"runtime/debug"
	"sync"

	"github.com/ptyhub/ptyhub/proc"
)

// Build identifies the ptyhub binary this process runs: the Go build ID the toolchain
// stamps into the executable (it changes with any change of the code, the dependencies
// or the toolchain), else the VCS revision and Go version it was built from.
func Build() string { return selfBuild() }

var selfBuild = sync.OnceValue(func() string { return buildOf(proc.Executable()) })

// buildOf returns the build of the executable at path (see Build).
func buildOf(path string) string {
	if id := goBuildID(path); id != "" {
		return id
	}
	v := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || (s.Key == "vcs.modified" && s.Value == "true") {
				v += "-" + s.Value
			}
		}
	}
	return v
}

// goBuildID reads the Go build ID note of an ELF executable ("" when there is none).
func goBuildID(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sec := f.Section(".note.go.buildid")
	if sec == nil {
		return ""
	}
	b, err := sec.Data()
	// The note: namesz, descsz, type (4 bytes each), "Go\0\0", then the ID.
	if err != nil || len(b) < 16 || !bytes.Equal(b[12:16], []byte("Go\x00\x00")) {
		return ""
	}
	n := int(f.ByteOrder.Uint32(b[4:8]))
	if 16+n > len(b) {
		return ""
	}
	return string(b[16 : 16+n])
}

// exeDeleted reports whether this process's executable file is gone from the file system
// (deleted, or replaced by another file under its name): no new process can start it.
func exeDeleted() bool { return proc.ExecutableReplaced() }
