package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// teamSessions is a registry team and how many sessions it holds.
type teamSessions struct {
	team  string
	count int
}

// teamsWithSessions returns the registry teams of home other than skip
// that hold sessions, sorted by name. Unreadable registries count as
// empty: this is a hint, not a listing.
func teamsWithSessions(home, skip string) []teamSessions {
	ents, err := os.ReadDir(filepath.Join(home, ".config", "atm", "agent-sessions"))
	if err != nil {
		return nil
	}
	var out []teamSessions
	for _, e := range ents {
		if !e.IsDir() || e.Name() == skip {
			continue
		}
		dir, err := registry.TeamDir(home, e.Name())
		if err != nil {
			continue
		}
		insts, _ := dir.Scan()
		n := 0
		for _, inst := range insts {
			n += len(inst.Sessions)
		}
		if n > 0 {
			out = append(out, teamSessions{e.Name(), n})
		}
	}
	slices.SortFunc(out, func(a, b teamSessions) int { return strings.Compare(a.team, b.team) })
	return out
}

// otherTeamsHint says which other teams have sessions, for a command that
// found none in its team; "" when none do.
func otherTeamsHint(home, skip string) string {
	teams := teamsWithSessions(home, skip)
	if len(teams) == 0 {
		return ""
	}
	var parts []string
	for _, t := range teams {
		parts = append(parts, fmt.Sprintf("%s (%d)", t.team, t.count))
	}
	return fmt.Sprintf("Sessions are kept in other teams: %s. List them with --team %s.", strings.Join(parts, ", "), teams[0].team)
}

// teamOfSession returns the registry team other than skip that holds the
// session with this agent_id (or Codex thread id), or "".
func teamOfSession(home, skip, id string) string {
	for _, t := range teamsWithSessions(home, skip) {
		dir, err := registry.TeamDir(home, t.team)
		if err != nil {
			continue
		}
		insts, _ := dir.Scan()
		for _, inst := range insts {
			if slices.ContainsFunc(inst.Sessions, func(s registry.Session) bool { return s.AgentID == id || s.BackendID == id }) {
				return t.team
			}
		}
	}
	return ""
}
