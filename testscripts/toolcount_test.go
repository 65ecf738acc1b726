package testscripts

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// toolCountRe finds a count of tools in prose: "N tools", "its N MCP
// tools" (not "tools/call").
var toolCountRe = regexp.MustCompile(`\b([0-9]+) (?:MCP )?tools\b(/?)`)

// TestToolCount keeps every count of the server's tools in the
// repository's documents and Go comments (the READMEs, the plugin's
// README, package docs) equal to the number of tools serve lists
// (agentmcp/internal/tools/tools.json): the plugin's README once gave an
// old count.
func TestToolCount(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(len(toolNames(t)))
	counts := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".cache", "bin", "node_modules", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".md" && ext != ".go" {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(text), "\n") {
			for _, m := range toolCountRe.FindAllStringSubmatch(line, -1) {
				if m[2] == "/" {
					continue // tools/call
				}
				counts++
				if m[1] != want {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d says %q: serve has %s tools", rel, i+1, m[0], want)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if counts == 0 {
		t.Errorf("no document counts the tools: the pattern %s finds nothing", toolCountRe)
	}
}

// toolNames are the names of the tools serve lists, from tools.json.
func toolNames(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "agentmcp", "internal", "tools", "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &tools); err != nil || len(tools) == 0 {
		t.Fatalf("tools.json (%v): %d tools", err, len(tools))
	}
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Name
	}
	return names
}
