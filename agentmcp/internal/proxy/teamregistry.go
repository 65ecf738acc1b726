package proxy

import (
	"errors"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccsession"
	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// sessionTeamPrefix starts the instance names of Claude Code session teams
// in their shared registry (config.SessionTeamPrefix).
const sessionTeamPrefix = "session-"

// openRegistry opens the instance registry (Options.RegistryTeam and
// RegistryInstance, claiming the instance, or at the first session when
// Options.TeamMissing). For a Claude Code session team
// it then takes over the sessions of the earlier sessions' instances whose
// proxy has ended, so that `--resume`, `codex-reply` and `codex` with an
// agent_id find yesterday's Codex agents in today's session; but not the
// sessions handed over to another Claude Code session, the one their
// conversation moved to, whose serve takes them up (handover.go), unless
// that was longer than TakeOverWait ago.
func openRegistry(opts Options) (*registry.Registry, error) {
	reg, err := registry.Open(registry.Config{Home: opts.Home, Team: opts.RegistryTeam, Identity: opts.RegistryInstance,
		Logger: opts.Logger, Now: opts.Now, Deferred: opts.TeamMissing})
	if err != nil || !opts.SessionTeam {
		return reg, err
	}
	insts, err := reg.Dir().Scan()
	if err != nil {
		opts.Logger.Warn("cannot look for the sessions of earlier Claude Code sessions", "err", err)
		return reg, nil
	}
	short, now := ccsession.Short(opts.ClaudeSessionID), opts.Now()
	take := func(s registry.Session) bool {
		return s.HandedTo == "" || s.HandedTo == short || now.Sub(s.LastActive) > opts.TakeOverWait
	}
	for _, inst := range insts {
		if inst.Identity == opts.RegistryInstance || !strings.HasPrefix(inst.Identity, sessionTeamPrefix) {
			continue
		}
		_, err := reg.AdoptIf(inst.Identity, take)
		var conflict *registry.ConflictError
		switch {
		case errors.As(err, &conflict):
			opts.Logger.Debug("an earlier Claude Code session's proxy still runs; its sessions stay there", "instance", inst.Identity)
		case err != nil:
			opts.Logger.Warn("cannot take over an earlier Claude Code session's sessions", "instance", inst.Identity, "err", err)
		}
	}
	return reg, nil
}

// teamStamp is the sessions' view of a registry shared by several teams
// (Claude Code session teams): a session records the team it runs in now,
// when it starts and when it is resumed, not the registry's key. Like the
// registry it stamps, it names the team directory and the instance, so
// that the sessions can read the other instances' registries (where an
// unknown agent_id lives, agent_sessions with all).
type teamStamp struct {
	session.Registry
	team string
	reg  *registry.Registry
}

// Dir returns the registry's team directory.
func (r teamStamp) Dir() registry.Dir { return r.reg.Dir() }

// Identity returns the registry's instance.
func (r teamStamp) Identity() string { return r.reg.Identity() }

// Add records a new session in the current team.
func (r teamStamp) Add(s registry.Session) (registry.Session, error) {
	if s.Team == "" {
		s.Team = r.team
	}
	return r.Registry.Add(s)
}

// Update records a session that becomes live in the current team.
func (r teamStamp) Update(agentID string, fn func(*registry.Session)) (registry.Session, error) {
	return r.Registry.Update(agentID, func(s *registry.Session) {
		fn(s)
		if s.Status.Live() {
			s.Team = r.team
		}
	})
}
