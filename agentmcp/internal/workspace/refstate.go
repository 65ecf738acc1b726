package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// What a Tracker's base depends on, read from git's ref files without
// running git (a look after every ended turn must cost nothing when
// nothing moved): the worktree's HEAD, the lead's HEAD, the record's ref,
// loose or in packed-refs. Where the files do not tell (a reftable
// repository), the Tracker asks git.

// refState is what the change's base depends on, read from the refs'
// files (no git): the worktree's HEAD and the ref it names, the record's
// ref, the lead's HEAD and its ref, and packed-refs' identity. key is all
// of it, compared between looks; head, lead and record are the commits
// (and the record's blob) they resolve to, "" where the files do not
// tell (git is asked then).
type refState struct {
	key, head, lead, record string
}

// readRefs reads the refState; ok is false when the refs cannot be read
// from files (a reftable repository, a HEAD missing).
func (t *Tracker) readRefs() (rs refState, ok bool) {
	d := t.dirs
	if d.gitDir == "" || present(filepath.Join(d.common, "reftable")) {
		return rs, false
	}
	var key strings.Builder
	var packed map[string]string // read once, when a ref is not loose
	resolve := func(ref string) string {
		if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
			key.WriteString("?" + ref + ";")
			return ""
		}
		v, err := os.ReadFile(filepath.Join(d.common, filepath.FromSlash(ref)))
		key.WriteString(ref + "=" + string(v) + ";")
		if err == nil {
			if oid := strings.TrimSpace(string(v)); isOID(oid) {
				return oid
			}
			return ""
		}
		if packed == nil {
			packed = readPackedRefs(filepath.Join(d.common, "packed-refs"))
		}
		return packed[ref]
	}
	head := func(gitDir string) (string, bool) {
		h, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
		if err != nil {
			return "", false
		}
		key.WriteString(string(h) + ";")
		v := strings.TrimSpace(string(h))
		if ref, ok := strings.CutPrefix(v, "ref: "); ok {
			return resolve(ref), true
		}
		if isOID(v) {
			return v, true
		}
		return "", true
	}
	if rs.head, ok = head(d.gitDir); !ok {
		return rs, false
	}
	if rs.lead, ok = head(d.leadGitDir); !ok {
		return rs, false
	}
	rs.record = resolve(recordRefs + t.p.Name)
	if fi, err := os.Stat(filepath.Join(d.common, "packed-refs")); err == nil {
		key.WriteString(strconv.FormatInt(fi.Size(), 10) + "@" + strconv.FormatInt(fi.ModTime().UnixNano(), 10) + inode(fi))
	}
	rs.key = key.String()
	return rs, true
}

// readPackedRefs reads git's packed-refs file: "<oid> <ref>" lines (a
// "^<oid>" line peels the tag above it; "#" starts the header).
func readPackedRefs(path string) map[string]string {
	b, _ := os.ReadFile(path)
	return parsePackedRefs(b)
}

// parsePackedRefs reads packed-refs' lines (see readPackedRefs).
func parsePackedRefs(b []byte) map[string]string {
	refs := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if oid, ref, ok := strings.Cut(l, " "); ok && isOID(oid) {
			refs[ref] = oid
		}
	}
	return refs
}

// isOID reports whether s is a full object id (SHA-1 or SHA-256, hex).
func isOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// present reports whether p names a file, directory or link (a dangling
// link too).
func present(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// inode is a file's inode number, where the system has one.
func inode(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return "#" + strconv.FormatUint(uint64(st.Ino), 10)
	}
	return ""
}
