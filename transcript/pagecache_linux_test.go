package transcript

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPageDropperKeepsBytes: a transcript written past the page dropper's lag (its early
// pages dropped from the page cache once written back) reads back every byte at every
// offset (ReadAt, served from the file), and, on a file system with a disk behind it
// (ext4, xfs, btrfs), the early pages are no longer in the page cache while the last
// ones are.
func TestPageDropperKeepsBytes(t *testing.T) {
	w, dir := create(t, Options{Spill: true})
	const total = dropLag + 3*dropChunk + 12345
	data := make([]byte, total)
	for i := range data {
		data[i] = 'a' + byte(i%26)
		if i%97 == 96 {
			data[i] = '\n'
		}
	}
	for off := 0; off < total; off += readChunk {
		end := min(off+readChunk, total)
		w.Output(at(off/readChunk), int64(off), data[off:end])
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if w.drop.dropped == 0 {
		t.Fatalf("nothing dropped after %d bytes of .cast", w.drop.end)
	}
	// The pages first, before the reads below bring the early ones back.
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	switch st.Type {
	default:
		// tmpfs keeps its pages, and an overlay or FUSE file system may not write back
		// through sync_file_range: the pages are not checked there.
		t.Logf("%s is on file system %#x: its pages are not checked", dir, st.Type)
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC:
		res := resident(t, w.Path())
		if first := res[:dropChunk/os.Getpagesize()]; bytes.Count(first, []byte{1}) != 0 {
			t.Fatalf("%d of the first %d pages of the .cast still cached", bytes.Count(first, []byte{1}), len(first))
		}
		if last := res[len(res)-dropChunk/os.Getpagesize():]; bytes.Count(last, []byte{1}) == 0 {
			t.Fatalf("none of the last %d pages cached: more dropped than written back", len(last))
		}
	}
	buf := make([]byte, 50_000)
	for off := int64(0); off < total; off += 777_777 {
		n := w.ReadAt(buf, off)
		want := data[off:min(off+int64(len(buf)), total)]
		if !bytes.Equal(buf[:n], want) {
			t.Fatalf("ReadAt(%d): %d bytes, want %d equal to the output", off, n, len(want))
		}
	}
}

// readChunk is the output handed to the writer at once in TestPageDropperKeepsBytes.
const readChunk = 64 << 10

// resident returns, per page of the file at path, 1 if it is in the page cache (mincore).
func resident(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for i := range vec {
		vec[i] &= 1
	}
	return vec
}
