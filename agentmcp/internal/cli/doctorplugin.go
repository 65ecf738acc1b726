package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// installedPlugin is one installation of our plugin in Claude Code's
// {config dir}/plugins/installed_plugins.json (version 2 of that file, as
// Claude Code 2.1.332 writes it: {"plugins": {"NAME@MARKETPLACE":
// [{"scope", "installPath", "version", …}]}}).
type installedPlugin struct {
	ID      string // atm-agent-mcp@atm-agent-mcp
	Scope   string
	Version string
}

// installedPlugins reads the installations of our plugin; a missing file
// has none.
func installedPlugins(path string) ([]installedPlugin, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Plugins map[string][]struct {
			Scope   string `json:"scope"`
			Version string `json:"version"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []installedPlugin
	for id, insts := range doc.Plugins {
		if !strings.HasPrefix(id, pluginName+"@") {
			continue
		}
		for _, in := range insts {
			out = append(out, installedPlugin{ID: id, Scope: in.Scope, Version: in.Version})
		}
	}
	slices.SortFunc(out, func(a, b installedPlugin) int { return strings.Compare(a.ID+a.Scope, b.ID+b.Scope) })
	return out, nil
}

// plugin compares this binary's plugin version with the plugin that runs
// it (the launcher's EnvPluginVersion) or else with the installed plugin,
// and with the atm-agent-mcp first on PATH, which the launcher may run
// instead of this one. Another version is a warning: serve runs, but the
// plugin's skill and commands may name tools it lacks.
func (d *doctor) plugin(ctx context.Context) check {
	c := check{Name: "plugin", Status: statusOK}
	if d.pluginVersion == "" {
		c.Status, c.Detail = statusSkip, "this build does not know its plugin version"
		return c
	}
	var problems, fixes, notes []string
	mismatch := func(what, version string) {
		if msg, bad := pluginMismatch(d.pluginVersion, version); bad {
			problems, fixes = append(problems, what), append(fixes, msg)
		} else {
			notes = append(notes, what+", the version this binary was built with")
		}
	}
	plugins := 0
	if v := strings.TrimSpace(d.getenv(EnvPluginVersion)); v != "" {
		plugins++
		mismatch("started by the launcher of plugin "+v, v)
	} else {
		path := filepath.Join(d.claudeConfigDir(), "plugins", "installed_plugins.json")
		insts, err := installedPlugins(path)
		if err != nil {
			problems = append(problems, "cannot read Claude Code's installed plugins: "+err.Error())
		}
		for _, in := range insts {
			plugins++
			mismatch(fmt.Sprintf("%s %s is installed (%s scope)", in.ID, in.Version, in.Scope), in.Version)
		}
		if plugins == 0 && err == nil {
			notes = append(notes, "the Claude Code plugin is not installed (not in "+path+")")
		}
	}
	if p, v, other := d.pathBinary(ctx); other && v != d.pluginVersion {
		built := "plugin " + v
		if v == "" {
			built = "an older plugin (it has no plugin-version command)"
		}
		problems = append(problems, fmt.Sprintf("the atm-agent-mcp first on PATH, %s, is another binary, built with %s", p, built))
		fixes = append(fixes, fmt.Sprintf("replace or remove %s (make install or go install puts the new one in $GOBIN or ~/go/bin, "+
			"which must come first on PATH); the plugin's launcher runs the first binary of its own version it finds", p))
	}
	c.Detail = strings.Join(append(problems, notes...), "; ") + " (this binary: plugin " + d.pluginVersion + ")"
	switch {
	case len(problems) > 0:
		c.Status, c.Fix = statusWarn, strings.Join(fixes, "; ")
	case plugins == 0:
		c.Status = statusSkip
	}
	return c
}

// pathBinary finds the atm-agent-mcp first on PATH and, when it is not
// this program, asks it for its plugin version ("" when it cannot say: a
// build from before the command existed).
func (d *doctor) pathBinary(ctx context.Context) (path, version string, other bool) {
	p, err := lookPathIn("atm-agent-mcp", d.getenv("PATH"))
	if err != nil {
		return "", "", false
	}
	self, err := os.Executable()
	if err != nil {
		return "", "", false
	}
	if same(p, self) {
		return p, d.pluginVersion, false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "plugin-version").Output()
	if err != nil {
		return p, "", true
	}
	return p, strings.TrimSpace(string(out)), true
}

// lookPathIn is exec.LookPath over the directories of path.
func lookPathIn(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// same reports whether two paths are the same file.
func same(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}
