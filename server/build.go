package server

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
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

// headSize is how much of an executable goBuildID reads at first: the ELF header, the
// program headers and the Go linker's notes all lie in the first page.
const headSize = 8 << 10

// goBuildID reads the Go build ID note of an ELF executable ("" when there is none): the
// note named "Go" of type 4 in a PT_NOTE segment, where the Go linker puts it (as the go
// command itself reads it). It reads the file's head, and the notes again only when
// they lie past it; it does not parse section headers (debug/elf would, and would link
// its DWARF and zstd decoders into every CLI call).
func goBuildID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, headSize)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return ""
	}
	return noteBuildID(f, head[:n])
}

// noteBuildID finds the Go build ID in the PT_NOTE segments of the ELF file f whose first
// bytes are head.
func noteBuildID(f io.ReaderAt, head []byte) string {
	const (
		ptNote      = 4
		goNoteType  = 4
		maxNoteSize = 64 << 10
	)
	if len(head) < 52 || !bytes.Equal(head[:4], []byte("\x7fELF")) {
		return ""
	}
	var bo binary.ByteOrder
	switch head[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return ""
	}
	// Where the program headers are, by class (ELF32 or ELF64).
	var phoff uint64
	var phentsize, phnum int
	is64 := head[4] == 2
	switch {
	case head[4] == 1:
		phoff = uint64(bo.Uint32(head[0x1c:]))
		phentsize, phnum = int(bo.Uint16(head[0x2a:])), int(bo.Uint16(head[0x2c:]))
	case is64 && len(head) >= 64:
		phoff = bo.Uint64(head[0x20:])
		phentsize, phnum = int(bo.Uint16(head[0x36:])), int(bo.Uint16(head[0x38:]))
	default:
		return ""
	}
	if (is64 && phentsize < 56) || (!is64 && phentsize < 32) || phnum > 256 {
		return ""
	}
	// at returns n bytes at off, from head when they lie in it.
	at := func(off, n uint64) []byte {
		if off+n >= off && off+n <= uint64(len(head)) {
			return head[off : off+n]
		}
		if n > maxNoteSize {
			return nil
		}
		b := make([]byte, n)
		if _, err := f.ReadAt(b, int64(off)); err != nil {
			return nil
		}
		return b
	}
	phdrs := at(phoff, uint64(phentsize*phnum))
	if phdrs == nil {
		return ""
	}
	for i := range phnum {
		ph := phdrs[i*phentsize:]
		if bo.Uint32(ph) != ptNote {
			continue
		}
		var off, size uint64
		if is64 {
			off, size = bo.Uint64(ph[8:]), bo.Uint64(ph[32:])
		} else {
			off, size = uint64(bo.Uint32(ph[4:])), uint64(bo.Uint32(ph[16:]))
		}
		notes := at(off, size)
		// Each note: name size, descriptor size, type, then the name and the
		// descriptor, each padded to 4 bytes.
		for len(notes) >= 12 {
			namesz, descsz, typ := uint64(bo.Uint32(notes)), uint64(bo.Uint32(notes[4:])), bo.Uint32(notes[8:])
			name := 12 + (namesz+3)&^3
			end := name + (descsz+3)&^3
			if namesz > uint64(len(notes)) || descsz > uint64(len(notes)) || end > uint64(len(notes)) {
				break
			}
			if typ == goNoteType && namesz == 4 && string(notes[12:16]) == "Go\x00\x00" {
				return string(notes[name : name+descsz])
			}
			notes = notes[end:]
		}
	}
	return ""
}

// exeDeleted reports whether this process's executable file is gone from the file system
// (deleted, or replaced by another file under its name): no new process can start it.
func exeDeleted() bool { return proc.ExecutableReplaced() }
