// This file walks from a directory up to the directories git itself would
// look in for a repository.
//
// Git stops its search below any directory named in GIT_CEILING_DIRECTORIES
// (a list of absolute paths separated by the OS path list separator): it
// never looks into a ceiling that is a proper ancestor of the start. The
// proxy's git facts and the .atm.toml search honour it too, so that they
// agree with `git rev-parse` wherever the user has set it (build machines
// whose /tmp lies inside a checkout, slow network mounts).
package gitctx

import (
	"iter"
	"os"
	"path/filepath"
)

// CeilingEnv names the environment variable git reads its ceilings from.
const CeilingEnv = "GIT_CEILING_DIRECTORIES"

// Up yields dir (absolute, clean) and then each parent in turn, up to the
// file system root or to the last directory below the nearest ceiling in
// GIT_CEILING_DIRECTORIES, as read when Up is called.
func Up(dir string) iter.Seq[string] {
	return UpTo(dir, Ceilings(os.Getenv(CeilingEnv)))
}

// UpTo is Up with the ceilings given.
func UpTo(dir string, ceilings []string) iter.Seq[string] {
	return func(yield func(string) bool) {
		d := filepath.Clean(dir)
		for {
			if !yield(d) {
				return
			}
			parent := filepath.Dir(d)
			if parent == d || isCeiling(parent, ceilings) {
				return
			}
			d = parent
		}
	}
}

// Ceilings parses a GIT_CEILING_DIRECTORIES value: the absolute entries,
// cleaned, each also with its symbolic links resolved (as git does) unless
// it follows an empty entry, which tells git that the rest need no
// resolving. Relative entries are ignored, as git ignores them.
func Ceilings(list string) []string {
	if list == "" {
		return nil
	}
	var out []string
	resolve := true
	for _, e := range filepath.SplitList(list) {
		if e == "" {
			resolve = false
			continue
		}
		if !filepath.IsAbs(e) {
			continue
		}
		e = filepath.Clean(e)
		out = append(out, e)
		if resolve {
			if r, err := filepath.EvalSymlinks(e); err == nil && r != e {
				out = append(out, r)
			}
		}
	}
	return out
}

func isCeiling(d string, ceilings []string) bool {
	for _, c := range ceilings {
		if d == c {
			return true
		}
	}
	return false
}
