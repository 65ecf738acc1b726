package workspace

import (
	"strings"
	"testing"
	"unicode"
)

// The parsers of git's output never panic, whatever they are given.

func FuzzParseDiffTree(f *testing.F) {
	f.Add(":100644 100644 a b M\x00f\x00:100644 100644 c d R100\x00g\x00g moved\x002\t2\tf\x000\t0\t\x00g\x00g moved\x00\x00diff --git a/f b/f\n@@ -5,2 +5,2 @@\n-5\n+6\n")
	f.Add("")
	f.Add(":x\x00")
	f.Fuzz(func(t *testing.T, s string) {
		files, patch, err := parseDiffTree(s)
		if err == nil {
			addRanges(files, patch)
		}
	})
}

func FuzzParseMergeTree(f *testing.F) {
	f.Add([]byte("3d73\x00100644 0ff3 1\tf\x00100644 c5fa 2\tf\x00\x001\x00f\x00CONFLICT (contents)\x00CONFLICT (content): Merge conflict in f\n\x00"))
	f.Add([]byte("1573\x00\x001\x00f\x00Auto-merging\x00Auto-merging f\n\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		tree, cs, err := parseMergeTree(b)
		if err == nil && tree == "" {
			t.Errorf("no tree and no error for %q", b)
		}
		for _, c := range cs {
			if c.Path == "" {
				t.Errorf("a conflict without a path: %+v", c)
			}
		}
	})
}

func FuzzParseWorktreeList(f *testing.F) {
	f.Add([]byte("worktree /r\x00HEAD 06\x00branch refs/heads/main\x00\x00worktree /r/w\x00HEAD 06\x00detached\x00locked why\x00prunable gone\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) { parseWorktreeList(b) })
}

func FuzzLockReason(f *testing.F) {
	f.Add("codex-01k", 1234, "5678", "host")
	f.Add("", 0, "", "")
	f.Fuzz(func(t *testing.T, agent string, pid int, start, host string) {
		if strings.ContainsFunc(agent+start+host, func(r rune) bool { return unicode.IsSpace(r) || r == '=' }) || pid <= 0 || agent == "" {
			return
		}
		o := Owner{PID: pid, Start: start, Host: host}
		h, ok := parseLockReason(lockReason(agent, o))
		if !ok || h.AgentID != agent || h.Owner != o {
			t.Errorf("round trip of %q %+v: %+v, %v", agent, o, h, ok)
		}
	})
}

func FuzzStatusPaths(f *testing.F) {
	f.Add([]byte("1 .M N... 100644 100644 100644 a b f x\x002 R. N... 100644 100644 100644 a b R100 new\x00old\x00? u\x00"))
	f.Fuzz(func(t *testing.T, b []byte) { statusPaths(b) })
}

func FuzzMarkerHunks(f *testing.F) {
	f.Add("a\n<<<<<<< ours\nx\n||||||| base\nb\n=======\ny\n>>>>>>> theirs\nz\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, h := range markerHunks(s) {
			if h.Line < 1 {
				t.Errorf("hunk at line %d", h.Line)
			}
		}
	})
}

func FuzzParseHunkOld(f *testing.F) {
	f.Add("@@ -5,3 +5,2 @@")
	f.Fuzz(func(t *testing.T, s string) { parseHunkOld(s) })
}

func FuzzParsePackedRefs(f *testing.F) {
	f.Add([]byte("# pack-refs with: peeled fully-peeled sorted \n" +
		"0123456789abcdef0123456789abcdef01234567 refs/heads/main\n^89abcdef0123456789abcdef0123456789abcdef\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for ref, oid := range parsePackedRefs(b) {
			if !isOID(oid) || strings.Contains(ref, "\n") {
				t.Fatalf("%q → %q", ref, oid)
			}
		}
	})
}
