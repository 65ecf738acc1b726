package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
)

// files are the file operations of a Manager that are not git commands,
// on the machine that holds the checkouts: this one (localFiles, the os
// package), or a host the Manager's Runner reaches (shFiles, each
// operation one fixed sh program run through the Runner). Everything of a
// worktree that is not git's goes through them, so that a Manager on a
// host touches no file of this machine.
type files interface {
	// realDir is the directory dir with its symbolic links resolved.
	realDir(ctx context.Context, dir string) (string, error)
	// isDir reports whether p is a directory (following links).
	isDir(ctx context.Context, p string) bool
	// isRegular reports whether p is a regular file (not a link to one);
	// false when there is nothing there.
	isRegular(ctx context.Context, p string) (bool, error)
	// exists reports whether p names anything, a dangling link too; an
	// error when it cannot tell.
	exists(ctx context.Context, p string) (bool, error)
	// mkdirAll makes dir and its missing parents.
	mkdirAll(ctx context.Context, dir string) error
	// safeDirs makes rel below top, one directory at a time, refusing any
	// that is a symbolic link (ErrSymlink) or not a directory.
	safeDirs(ctx context.Context, top, rel string) error
	// readFile returns p's content; an error wrapping fs.ErrNotExist when
	// there is no such file.
	readFile(ctx context.Context, p string) ([]byte, error)
	// writeFileAtomic replaces p with data (mode), through a temporary
	// file beside it, renamed over it.
	writeFileAtomic(ctx context.Context, p string, data []byte, mode fs.FileMode) error
	// copyIncluded copies the files rels (relative, slash-separated) from
	// top to the same paths below wt: regular files only (skipped is
	// told of the others), never over a file that is there, never
	// through a directory that is a symbolic link. It returns those
	// copied.
	copyIncluded(ctx context.Context, top, wt string, rels []string, skipped func(rel string)) ([]string, error)
	// tempCopy makes a new file in dir holding a copy of src (empty when
	// src is missing) and returns its path.
	tempCopy(ctx context.Context, dir, src string) (string, error)
	// remove removes the file p; a missing one is no error.
	remove(ctx context.Context, p string) error
	// installIndex makes the file index the index realIndex, as git
	// replaces an index: through realIndex.lock (made by a hard link,
	// which fails while a git holds the lock), renamed over it.
	installIndex(ctx context.Context, index, realIndex string) error
	// lock takes an exclusive lock of the file p (made when missing),
	// waiting for it; unlock lets it go.
	lock(ctx context.Context, p string) (unlock func(), err error)
}

// localFiles are the files of this machine.
type localFiles struct{}

func (localFiles) realDir(_ context.Context, dir string) (string, error) {
	return filepath.EvalSymlinks(dir)
}

func (localFiles) isDir(_ context.Context, p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func (localFiles) isRegular(_ context.Context, p string) (bool, error) {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular(), nil
}

func (localFiles) exists(_ context.Context, p string) (bool, error) {
	_, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (localFiles) mkdirAll(_ context.Context, dir string) error { return os.MkdirAll(dir, 0o755) }

func (localFiles) safeDirs(_ context.Context, top, rel string) error {
	p := top
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("workspace: %w", err)
			}
			fi, err = os.Lstat(p)
		}
		if err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("workspace: %s: %w", p, ErrSymlink)
		}
		if !fi.IsDir() {
			return fmt.Errorf("workspace: %s is not a directory", p)
		}
	}
	return nil
}

func (localFiles) readFile(_ context.Context, p string) ([]byte, error) { return os.ReadFile(p) }

func (localFiles) writeFileAtomic(_ context.Context, path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("workspace: %w", err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("workspace: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("workspace: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

func (l localFiles) copyIncluded(ctx context.Context, top, wt string, rels []string, skipped func(string)) ([]string, error) {
	var copied []string
	for _, rel := range rels {
		src, dst := filepath.Join(top, rel), filepath.Join(wt, rel)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			skipped(rel)
			continue
		}
		if dir := filepath.Dir(rel); dir != "." {
			if err := l.safeDirs(ctx, wt, dir); err != nil {
				return copied, err
			}
		}
		if err := copyFile(src, dst, fi.Mode().Perm()); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return copied, fmt.Errorf("workspace: copy %s: %w", rel, err)
		}
		copied = append(copied, rel)
	}
	return copied, nil
}

// copyFile copies src to a new file dst (failing with fs.ErrExist when dst
// exists).
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}

func (localFiles) tempCopy(_ context.Context, dir, src string) (string, error) {
	tmp, err := os.CreateTemp(dir, "atm-snapshot-*.index")
	if err != nil {
		return "", err
	}
	if in, err := os.Open(src); err == nil {
		_, err = io.Copy(tmp, in)
		in.Close()
		if err != nil {
			tmp.Close()
			return tmp.Name(), fmt.Errorf("copy the index: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		tmp.Close()
		return tmp.Name(), err
	}
	return tmp.Name(), tmp.Close()
}

func (localFiles) remove(_ context.Context, p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (localFiles) installIndex(_ context.Context, index, realIndex string) error {
	lock := realIndex + ".lock"
	if err := os.Link(index, lock); err != nil {
		return err
	}
	if err := os.Rename(lock, realIndex); err != nil {
		os.Remove(lock)
		return err
	}
	return nil
}

func (localFiles) lock(_ context.Context, p string) (func(), error) {
	fl := flock.New(p)
	if err := fl.Lock(); err != nil {
		return nil, err
	}
	return func() { _ = fl.Unlock() }, nil
}
