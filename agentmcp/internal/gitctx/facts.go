package gitctx

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Facts are the git facts of a directory. Outside a git repository all
// three are nil: they are never derived from the directory name.
type Facts struct {
	Root   *string
	Name   *string
	Branch *string
}

// read reads the facts of dir (absolute) from the files, with the
// git directory and the common directory (where config is) they came from
// ("" outside git).
func (c *repoInfoCache) read(dir string) (f Facts, gitDir, common string) {
	root, gitDir := findGitDir(dir)
	if root == "" {
		return f, "", ""
	}
	f.Root = &root
	name, branch, common := c.lookup(root, gitDir)
	f.Name = &name
	if branch != "" {
		f.Branch = &branch
	}
	return f, gitDir, common
}

// repoInfoCache keeps what was read of a repository's files (its name from the
// origin URL, its branch from HEAD) with the files' stamps: when the facts
// are read again (every turn where nothing reports changes, see
// factsWatcher) three stats tell whether a file changed (a checkout
// rewrites HEAD) before anything is read again. As git does with its index ("racy git"), a file
// modified shortly before it was read is read again every time: the clock
// that stamps files is coarse, and a rewrite of the same size within one
// tick would not show.
type repoInfoCache struct {
	mu      sync.Mutex          // guards entries
	entries map[string]repoInfo // by git directory and root
}

type repoInfo struct {
	stamps       [3]fileStamp // commondir, HEAD, config
	read         int64        // when the files were read (Unix ns)
	name, branch string
}

// racyWindow is how much older than its reading a file must be for its
// stamp to be trusted.
const racyWindow = int64(100 * time.Millisecond)

// trusted reports whether e still describes files with these stamps.
func (e repoInfo) trusted(stamps [3]fileStamp) bool {
	if e.stamps != stamps {
		return false
	}
	for _, st := range stamps {
		if st.present && st.mtime > e.read-racyWindow {
			return false
		}
	}
	return true
}

// fileStamp is what a stat says of a file's content: absent, or its size
// and modification time.
type fileStamp struct {
	present bool
	size    int64
	mtime   int64
}

func stampOf(path string) fileStamp {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{present: true, size: st.Size(), mtime: st.ModTime().UnixNano()}
}

// maxRepoCache bounds the cache: a proxy's sessions work in a few
// repositories.
const maxRepoCache = 256

func (c *repoInfoCache) lookup(root, gitDir string) (name, branch, common string) {
	now := time.Now().UnixNano()
	commondir := filepath.Join(gitDir, "commondir")
	stamps := [3]fileStamp{stampOf(commondir), stampOf(filepath.Join(gitDir, "HEAD")), {}}
	common = gitDir
	if stamps[0].present {
		if b, err := os.ReadFile(commondir); err == nil {
			c := strings.TrimSpace(string(b))
			if !filepath.IsAbs(c) {
				c = filepath.Join(gitDir, c)
			}
			common = filepath.Clean(c)
		}
	}
	config := filepath.Join(common, "config")
	stamps[2] = stampOf(config)
	key := gitDir + "\x00" + root
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && e.trusted(stamps) {
		return e.name, e.branch, common
	}
	e = repoInfo{stamps: stamps, read: now, name: repoName(root, originURL(config))}
	if b, err := os.ReadFile(filepath.Join(gitDir, "HEAD")); err == nil {
		head := strings.TrimSpace(string(b))
		if ref, ok := strings.CutPrefix(head, "ref: "); ok {
			e.branch = strings.TrimPrefix(ref, "refs/heads/")
		} else if len(head) >= 7 {
			e.branch = "detached@" + head[:7]
		}
	}
	c.mu.Lock()
	if len(c.entries) >= maxRepoCache {
		clear(c.entries)
	}
	c.entries[key] = e
	c.mu.Unlock()
	return e.name, e.branch, common
}

// repoName is a repository's name: the last element of its origin's url
// (without .git), else its root's base name.
func repoName(root, url string) string {
	if url != "" {
		u := strings.TrimSuffix(strings.TrimRight(url, "/"), ".git")
		if i := strings.LastIndexAny(u, "/:"); i >= 0 {
			u = u[i+1:]
		}
		if u != "" {
			return path.Base(u)
		}
	}
	return path.Base(root)
}

// findGitDir walks up from dir (absolute) to the nearest .git, where git
// itself would look (Up), and returns the work tree root and the
// git directory. A .git directory without HEAD is passed over, as git
// passes it over.
func findGitDir(dir string) (root, gitDir string) {
	for d := range Up(dir) {
		p := filepath.Join(d, ".git")
		if st, err := os.Stat(p); err == nil {
			if st.IsDir() {
				if _, err := os.Stat(filepath.Join(p, "HEAD")); err != nil {
					continue // not a git directory (git wants HEAD too): an empty .git left by something
				}
				return d, p
			}
			if b, err := os.ReadFile(p); err == nil {
				if g, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
					g = strings.TrimSpace(g)
					if !filepath.IsAbs(g) {
						g = filepath.Join(d, g)
					}
					return d, filepath.Clean(g)
				}
			}
		}
	}
	return "", ""
}

// originURL returns remote.origin.url from a git config file, or "".
func originURL(configPath string) string {
	b, err := os.ReadFile(configPath)
	if err != nil {
		return ""
	}
	inOrigin := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			inOrigin = strings.ReplaceAll(line, " ", "") == `[remote"origin"]`
			continue
		}
		if !inOrigin {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "url" {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}
