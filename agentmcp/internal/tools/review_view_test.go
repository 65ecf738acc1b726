package tools

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/workspace"
)

// TestDiffViewFits: agent_diff's JSON and text stay within the cap
// whatever the patch holds (characters that JSON escapes, several bytes
// per character, long lines); the page is cut at a line's end where it
// can, and next_offset continues exactly where it ends; a file list too
// long for the cap is cut too, the stat still counting every file.
func TestDiffViewFits(t *testing.T) {
	var patch strings.Builder
	for i := range 400 {
		fmt.Fprintf(&patch, "+line %d <tag> \"quoted\"\tand ünïcödé ✓ & more\n", i)
	}
	long := strings.Repeat("x", 9000) + "\n"
	many := make([]workspace.FileChange, 3000)
	for i := range many {
		many[i] = workspace.FileChange{Path: fmt.Sprintf("dir/file-%04d.go", i), Status: "M", Added: 1, Removed: 1}
	}
	tests := []struct {
		name       string
		patch      string
		files      []workspace.FileChange
		offset     int
		limit      int
		cut        bool // the page is cut
		lineEnd    bool // … at a line's end
		filesKept  int  // -1: all
		wantOffset int
	}{
		{"fits whole", patch.String(), many[:3], 0, 80000, false, false, -1, 0},
		{"cut at a line's end", patch.String(), many[:3], 0, 6000, true, true, -1, 0},
		{"a later page", patch.String(), many[:3], 1234, 6000, true, true, -1, 1234},
		{"one long line", long, many[:3], 0, 4000, true, false, -1, 0},
		{"too many files", patch.String(), many, 0, 20000, true, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := append([]workspace.FileChange(nil), tt.files...)
			v := &DiffView{AgentID: "codex-1", Identity: "alice", Isolated: true, Base: strings.Repeat("a", 40), Head: strings.Repeat("b", 40),
				Branch: "atm/alice", Files: files, Stat: workspace.DiffStat{Files: len(files), Added: len(files), Removed: len(files)},
				Patch: tt.patch, PatchOffset: tt.offset, PatchTotal: tt.offset + utf8.RuneCountInString(tt.patch)}
			text := v.fit(tt.limit)
			if n := jsonLen(v); n > tt.limit {
				t.Errorf("JSON of %d characters, over the cap %d", n, tt.limit)
			}
			if n := utf8.RuneCountInString(text); n > tt.limit {
				t.Errorf("text of %d characters, over the cap %d", n, tt.limit)
			}
			if !strings.HasPrefix(tt.patch, v.Patch) || v.PatchOffset != tt.wantOffset {
				t.Errorf("the page is not the patch's start at %d (offset %d)", tt.wantOffset, v.PatchOffset)
			}
			got := []any{v.PatchMore, v.PatchMore && strings.HasSuffix(v.Patch, "\n"), v.Stat.Files}
			want := []any{tt.cut, tt.lineEnd, len(tt.files)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cut, at a line's end, files counted (-want +got):\n%s", diff)
			}
			if v.PatchMore && v.NextOffset != v.PatchOffset+utf8.RuneCountInString(v.Patch) {
				t.Errorf("next_offset %d does not follow the page (%d + %d)", v.NextOffset, v.PatchOffset, utf8.RuneCountInString(v.Patch))
			}
			if !v.PatchMore && v.NextOffset != 0 {
				t.Errorf("next_offset %d without more", v.NextOffset)
			}
			if tt.filesKept >= 0 && (v.FilesOmitted == 0 || len(v.Files)+v.FilesOmitted != len(tt.files)) {
				t.Errorf("%d files kept, %d omitted, of %d", len(v.Files), v.FilesOmitted, len(tt.files))
			}
			if tt.filesKept < 0 && v.FilesOmitted != 0 {
				t.Errorf("%d files omitted, want none", v.FilesOmitted)
			}
			if v.PatchMore && !strings.Contains(text, fmt.Sprintf("offset: %d} reads on", v.NextOffset)) {
				t.Errorf("the text does not say where to read on:\n%s", text[max(0, len(text)-300):])
			}
		})
	}
}

// TestMergeViewFits: a conflict's hunks are clipped to keep agent_merge's
// result within the cap, and every conflicted file stays listed.
func TestMergeViewFits(t *testing.T) {
	var conflicts []workspace.Conflict
	for i := range 40 {
		conflicts = append(conflicts, workspace.Conflict{Path: fmt.Sprintf("f%d.txt", i), Kind: "contents",
			Hunks: []workspace.ConflictHunk{{Line: 1, Lead: strings.Repeat("lead\n", 500), Agent: strings.Repeat("agent\n", 500)}}})
	}
	v := &MergeView{AgentID: "codex-1", Identity: "alice", LeadBranch: "main", Old: strings.Repeat("a", 40), Conflicts: conflicts}
	text := v.fit(20000, "atm/alice", "report")
	if n := jsonLen(v); n > 20000 || len(v.Conflicts) != 40 {
		t.Errorf("JSON of %d characters with %d conflicts; want at most 20000 with all 40", n, len(v.Conflicts))
	}
	if !strings.Contains(text, "f39.txt (contents)") || !strings.Contains(text, "nothing was changed anywhere") {
		t.Errorf("text:\n%s", text[:min(len(text), 500)])
	}
}

// BenchmarkDiffViewFit is what agent_diff adds to the git work
// (workspace's BenchmarkDiff10k): fitting a page of a 50-file patch, as
// workspace cut it at the cap, into max_result_chars (80,000) with its
// JSON and text.
func BenchmarkDiffViewFit(b *testing.B) {
	var patch strings.Builder
	for i := 0; patch.Len() < 80000; i++ {
		fmt.Fprintf(&patch, "+\tline %d of a changed file: if a < b && c > \"d\" {\n", i)
	}
	files := make([]workspace.FileChange, 50)
	for i := range files {
		files[i] = workspace.FileChange{Path: fmt.Sprintf("pkg/file%02d.go", i), Status: "M", Added: 30, Removed: 10}
	}
	page := string([]rune(patch.String())[:80000])
	for b.Loop() {
		v := &DiffView{AgentID: "codex-1", Identity: "alice", Isolated: true, Files: files, Patch: page, PatchTotal: 200000, PatchMore: true}
		if text := v.fit(80000); len(text) == 0 || jsonLen(v) > 80000 {
			b.Fatal("does not fit")
		}
	}
}
