package transcript

import (
	"os"

	"golang.org/x/sys/unix"
)

// wrote is Wrote once a chunk waits: writeback started per chunk, and the stretch more
// than dropLag behind dropped once written back. Errors are ignored: the pages then
// stay in the cache, as any file's.
func (d *PageDropper) wrote(f *os.File, end int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		for end-d.started >= dropChunk {
			unix.SyncFileRange(int(fd), d.started, dropChunk, unix.SYNC_FILE_RANGE_WRITE)
			d.started += dropChunk
		}
		if to := d.started - dropLag; to > d.dropped {
			const wait = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
			if unix.SyncFileRange(int(fd), d.dropped, to-d.dropped, wait) == nil {
				unix.Fadvise(int(fd), d.dropped, to-d.dropped, unix.FADV_DONTNEED)
				d.dropped = to
			}
		}
	})
}
