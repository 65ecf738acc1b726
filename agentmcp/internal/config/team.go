package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// TeamsDir returns where the teams of an ATM home live, {home}/.claude/teams.
func TeamsDir(home string) string { return filepath.Join(home, ".claude", "teams") }

// Teams returns the names of the teams in an ATM home: the directories of
// TeamsDir that hold a config.json, sorted. An unreadable or missing
// directory has none.
func Teams(home string) []string {
	ents, err := os.ReadDir(TeamsDir(home))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if fi, err := os.Stat(filepath.Join(TeamsDir(home), e.Name(), "config.json")); err == nil && fi.Mode().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// TeamWarning checks that the configured team exists: a directory in
// TeamsDir with a config.json. When it does not, ok is true and the
// warning names where the team came from, says what is missing (see
// [Config.TeamProblem]) and how to choose or create a team. It reads the
// directory and creates nothing; serve runs without the team (its sessions
// work, team mail fails), so this is a warning, not an error.
func (c *Config) TeamWarning() (w Warning, ok bool) {
	problem, ok := c.TeamProblem()
	if !ok {
		return Warning{}, false
	}
	msg := problem + " Choose a team with --team, ATM_TEAM or [core] default_team, or create this one: mkdir -p " +
		filepath.Join(TeamsDir(c.Home), c.Team, "inboxes") + " and a config.json listing its members"
	return Warning{File: c.Sources["team"].String(), Key: "team", Message: msg}, true
}

// TeamProblem says what is wrong with the configured team, if anything:
// that it does not exist, with the closest existing team ("did you mean
// my-team?") or else the teams that exist. ok is false when the team
// exists.
func (c *Config) TeamProblem() (problem string, ok bool) {
	cfgPath := filepath.Join(TeamsDir(c.Home), c.Team, "config.json")
	if fi, err := os.Stat(cfgPath); err == nil && fi.Mode().IsRegular() {
		return "", false
	}
	msg := fmt.Sprintf("%q does not exist (no %s);", c.Team, cfgPath)
	teams := Teams(c.Home)
	switch best := closest(c.Team, teams); {
	case best != "":
		msg += fmt.Sprintf(" did you mean %s?", best)
	case len(teams) == 0:
		msg += fmt.Sprintf(" there are no teams in %s yet.", TeamsDir(c.Home))
	case len(teams) <= 8:
		msg += " existing teams: " + strings.Join(teams, ", ") + "."
	default:
		msg += fmt.Sprintf(" %d teams exist, among them %s.", len(teams), strings.Join(teams[:8], ", "))
	}
	return msg, true
}

// ClosestTeam returns the existing team of home whose name is closest to
// team (within two edits), or "".
func ClosestTeam(home, team string) string { return closest(team, Teams(home)) }
