package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/gitctx"
)

const (
	// PluginName is the name of our section: [plugins.atm-agent-mcp].
	PluginName = "atm-agent-mcp"
	// RepoFileName is the repo-local configuration file.
	RepoFileName = ".atm.toml"
	// pluginKeyPrefix prefixes plugin keys in messages and sources.
	pluginKeyPrefix = "plugins." + PluginName + "."
)

// GlobalFile returns the global configuration file of an ATM home,
// {home}/.config/atm/config.toml.
func GlobalFile(home string) string {
	return filepath.Join(home, ".config", "atm", "config.toml")
}

// fileLayer is one parsed configuration file.
type fileLayer struct {
	path   string
	core   map[string]any // [core], nil if absent
	plugin map[string]any // [plugins.atm-agent-mcp], nil if absent
	// misspelt are the file's likely misspellings of our sections and
	// [core] keys (see sectionWarnings).
	misspelt []Warning
}

// readFile reads and parses one file. A missing file is (nil, nil) unless
// required.
func readFile(path string, required bool) (*fileLayer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return nil, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrFileNotFound, path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreadableFile, path, err)
	}
	return parseFile(path, data)
}

// parseFile parses the TOML text of the file at path.
func parseFile(path string, data []byte) (*fileLayer, error) {
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%w: %s:%d: %s", ErrMalformedFile, path, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformedFile, path, err)
	}
	fl := &fileLayer{path: path, misspelt: sectionWarnings(path, doc)}
	var err error
	if fl.core, err = table(path, doc, "core", "core"); err != nil {
		return nil, err
	}
	plugins, err := table(path, doc, "plugins", "plugins")
	if err != nil {
		return nil, err
	}
	if fl.plugin, err = table(path, plugins, PluginName, "plugins."+PluginName); err != nil {
		return nil, err
	}
	return fl, nil
}

// table returns m[key] as a table; absent is nil. name is the full key for
// the error message.
func table(path string, m map[string]any, key, name string) (map[string]any, error) {
	v, ok := m[key]
	if !ok {
		return nil, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{
			Key:      name,
			Source:   Source{Kind: SourceFile, Detail: path, Key: name},
			Value:    tomlText(v),
			Expected: "a table ([" + name + "])",
		}
	}
	return t, nil
}

// tomlText renders a decoded TOML value for messages.
func tomlText(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	}
	return fmt.Sprint(v)
}

// FindRepoFile returns the nearest .atm.toml for cwd: it looks in cwd and
// then in each parent up to and including the git root (the first directory,
// from cwd upwards, that holds a .git entry — a directory, or a file in
// worktrees and submodules — looking where git itself would: not into a
// directory named in GIT_CEILING_DIRECTORIES above cwd). Outside a git work
// tree only cwd is searched. ok is false when there is no such file.
func FindRepoFile(cwd string) (path string, ok bool) {
	return findRepoFile(cwd, gitctx.Ceilings(os.Getenv(gitctx.CeilingEnv)))
}

func findRepoFile(cwd string, ceilings []string) (path string, ok bool) {
	root, inGit := gitRoot(cwd, ceilings)
	dir := cwd
	for {
		p := filepath.Join(dir, RepoFileName)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, true
		}
		if !inGit || dir == root {
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// GitRoot returns the first directory from dir upwards that holds a .git
// entry, looking where git itself would (not into a directory named in
// GIT_CEILING_DIRECTORIES above dir).
func GitRoot(dir string) (string, bool) {
	return gitRoot(dir, gitctx.Ceilings(os.Getenv(gitctx.CeilingEnv)))
}

func gitRoot(dir string, ceilings []string) (string, bool) {
	for d := range gitctx.UpTo(dir, ceilings) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
	}
	return "", false
}
