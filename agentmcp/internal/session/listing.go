package session

import (
	"os"

	"github.com/atm-agent-mcp/atm-agent-mcp/registry"
)

// resumable reports whether s (whose record is rec) can be taken up by its
// agent_id from this serve (View.Resumable): it has a thread, and, when it
// is not live, no other live session holds its identity, here or in
// another process (a running holder of the identity's claim).
func (s *Session) resumable(rec registry.Session) bool {
	m := s.m
	if rec.BackendID == "" {
		return false
	}
	if rec.Status.Live() {
		return true
	}
	if other := m.ByIdentity(rec.Identity); other != nil && other != s {
		return false
	}
	if tr, ok := m.cfg.Registry.(teamRegistry); ok && rec.Identity != tr.Identity() {
		if h, running := tr.Dir().Owner(rec.Identity); running && h.PID != os.Getpid() {
			return false
		}
	}
	return true
}

// Elsewhere returns the sessions of the team's other proxy instances, as
// agent_sessions lists them with all (Dir.Scan: no lock, nothing written),
// leaving out the agent_ids the Manager holds. Their instance is named;
// a live one has the pid of the serve that runs it, and the live sessions
// of an instance whose serve is gone read stale. A session found in two
// registries is listed once. None is resumable from
// here: their registry is another instance's. Nil when the registry has no
// team directory to read.
func (a *Absent) Elsewhere() []View {
	tr, ok := a.cfg.Registry.(teamRegistry)
	if !ok {
		return nil
	}
	insts, err := tr.Dir().Scan()
	if err != nil {
		a.log.Warn("cannot read the other instances' registries", "err", err)
		return nil
	}
	var out []View
	seen := map[string]int{} // agent_id: index in out
	for _, in := range insts {
		if in.Identity == tr.Identity() || in.Err != nil {
			continue
		}
		for _, rec := range in.Sessions {
			if a.held(rec.AgentID) {
				continue
			}
			v := recordView(rec, rec.BackendID != "" && tr.Dir().HasSummary(rec.Identity, rec.BackendID))
			v.Instance = in.Identity
			if rec.Usage != nil {
				v.TokenUsage = a.cfg.Prices.Priced(rec.Model, ptr(usageOf(rec.Usage.Tokens))) // as its serve last wrote it
			}
			v.Model = rec.Model
			if in.Running && rec.Status.Live() {
				pid := in.Owner.PID
				v.ServePID = &pid
			}
			if i, ok := seen[rec.AgentID]; ok {
				// In two registries (a take-over cut short): the copy a
				// serve runs, else the one active last.
				if (v.ServePID != nil) != (out[i].ServePID != nil) && v.ServePID != nil ||
					(v.ServePID != nil) == (out[i].ServePID != nil) && v.LastActiveAt > out[i].LastActiveAt {
					out[i] = v
				}
				continue
			}
			seen[rec.AgentID] = len(out)
			out = append(out, v)
		}
	}
	return out
}
