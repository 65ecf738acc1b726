package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeFileAtomic replaces path with data, following google/renameio's
// pending-file sequence: a dot-prefixed temporary file in the same directory
// is written, fsynced, renamed over path, and the directory is fsynced so the
// rename itself is durable. The file gets filePerm. On failure before the
// rename the temporary file is removed and path is untouched; once the
// rename has happened the new content is in place even if the directory sync
// then fails (the error is still returned).
func writeFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, pendingPattern(base))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if err == nil {
			return
		}
		if f != nil {
			f.Close()
		}
		if !renamed {
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(filePerm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return fmt.Errorf("write %s: %w", path, cerr)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}

// pendingPattern is the os.CreateTemp pattern of the pending files of base.
func pendingPattern(base string) string { return "." + base + ".*.tmp" }

// isPending reports whether name is a pending file of base left by a crash.
func isPending(name, base string) bool {
	return strings.HasPrefix(name, "."+base+".") && strings.HasSuffix(name, ".tmp")
}

// removePending deletes the pending files of base in dir. It must only be
// called by the sole writer of that file.
func removePending(dir, base string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || !isPending(e.Name(), base) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
