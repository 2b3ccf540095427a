package transcript

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultKeep is how long Prune keeps transcripts by default.
const DefaultKeep = 7 * 24 * time.Hour

// pruneGrace protects files just created from a size-based prune racing the
// writer that is about to lock them.
const pruneGrace = 10 * time.Second

// Prune applies the retention policy to dir (a SessionsDir): it deletes
// transcripts last written more than keep ago, then the oldest ones until
// those left total at most keepBytes, each with its text log and raw spill, and
// a raw spill whose transcript is gone that no live writer holds. A spill is never
// deleted on its own while its transcript stays: a finished transcript's writer
// holds no file open, yet its session may still be listed and read back (its
// bytes that are not UTF-8 come from the spill, which Writer.Release deletes
// when the session leaves its manager). Transcripts being written (locked by a
// live writer) are never deleted, nor are files written in the last 10
// seconds. keep <= 0 and keepBytes <= 0 disable their rule. It costs one
// directory read and one stat per file, plus an open per file it considers
// deleting. It returns the paths it deleted.
func Prune(dir string, keep time.Duration, keepBytes int64, now time.Time) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: prune: %w", err)
	}
	type file struct {
		path string
		size int64
		mod  time.Time
	}
	var casts []file
	var total int64
	var removed []string
	remove := func(p string) {
		if err := os.Remove(p); err == nil {
			removed = append(removed, p)
		}
	}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, SpillExt):
			// Left by a manager that died: its transcript is gone (pruned).
			cast := strings.TrimSuffix(p, SpillExt) + Ext
			if _, err := os.Lstat(cast); errors.Is(err, os.ErrNotExist) && !locked(p) {
				remove(p)
			}
		case strings.HasSuffix(name, Ext):
			fi, err := e.Info()
			if err != nil {
				continue
			}
			casts = append(casts, file{p, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
	}
	sort.Slice(casts, func(i, j int) bool { return casts[i].mod.Before(casts[j].mod) })
	for _, f := range casts {
		age := now.Sub(f.mod)
		tooOld := keep > 0 && age > keep
		tooBig := keepBytes > 0 && total > keepBytes
		if !tooOld && !tooBig {
			break // sorted oldest first: the rest are newer and fit
		}
		if age < pruneGrace || locked(f.path) {
			continue
		}
		remove(f.path)
		os.Remove(strings.TrimSuffix(f.path, Ext) + LogExt) // the text log goes with it
		if sp := strings.TrimSuffix(f.path, Ext) + SpillExt; !locked(sp) {
			remove(sp) // and the raw spill, if a manager that died left one
		}
		total -= f.size
	}
	return removed, nil
}
