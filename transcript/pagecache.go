package transcript

import "os"

// PageDropper lets go of a growing file's pages in the page cache once the kernel has
// written them back, so that a flood's transcript (up to the cap, 256 MiB by default,
// for the .cast and as much for the .log) does not fill the user's page cache with pages
// nobody reads again, and so that the pages the files are written into are ones freed
// moments before (on a virtual machine that hands freed memory back to its host, a page
// never used or freed long ago costs the host a fault at its first touch: writing 512
// MiB cost ~0.5 s of system time there, against ~0.3 s with the pages dropped as they
// are written back). On Linux: once dropChunk bytes more were written it starts the
// writeback of that stretch (sync_file_range, SYNC_FILE_RANGE_WRITE, which does not
// wait for the disk), and drops what lies more than dropLag behind the end of what it
// started (sync_file_range waiting for that stretch's writeback, long done by then, then
// posix_fadvise POSIX_FADV_DONTNEED). A file under dropChunk bytes, most transcripts,
// costs nothing; a flood three system calls per dropChunk. Elsewhere it does nothing.
// Reads of the file (read_output of offsets that left memory) are served from the disk
// for the pages dropped. For one goroutine, the file's writer; the zero value is ready.
type PageDropper struct {
	end     int64 // the file's length: the bytes written to it
	started int64 // the file's bytes below this have had their writeback started
	dropped int64 // the file's bytes below this were dropped from the page cache
}

const (
	dropChunk = 4 << 20
	dropLag   = 8 << 20
)

// Wrote says n more bytes were written to the file f (written in order, from offset 0).
func (d *PageDropper) Wrote(f *os.File, n int64) {
	d.end += n
	if d.end-d.started < dropChunk {
		return
	}
	d.wrote(f, d.end)
}
