// Package view is `atm-agent-mcp view` and `atm-agent-mcp status`: a live
// picture of every agent of a team, across every serve of that team on
// the machine.
//
// [Team] finds the team's serves from the feed records in their registry
// instance directories (package feed), follows each one's feed, and merges
// them: a serve that starts is followed within [TeamConfig.Rescan]; one
// whose stream ends (it exited) has its agents shown gone at once; one
// that starts again under the same instance is followed again. It never
// reads registry files for live state: states come only from the feeds,
// which come from the protocol events each serve has. The registry adds
// only what no feed can tell: the usage of the team's sessions that no
// running serve shows (closed, or of a serve that is gone), to the team's
// totals, and a team budget set at run time (totals.go).
//
// [Server] serves one page of a Team on 127.0.0.1 only: HTML, CSS and a
// small script embedded in the binary (assets/, go:embed; no build step),
// live over server-sent events (/events: the snapshot, then each change;
// a browser reconnects by itself and starts from a fresh snapshot). Per
// agent: identity, kind, model, state and for how long, what it does now,
// turns, tokens and cost, unread mail, pending approvals with Approve and
// Deny, its cwd and branch, its own sub-agents; the team's mail as a
// timeline; each agent's turns as an SVG timeline; an agent's page
// (#agent/<serve>/<agent_id>) with its recent items, messages and last
// result, and for an agent in a worktree of its own the change itself
// (GET /api/diff, asked of the serve that runs the agent over its feed:
// that serve knows the worktree and runs git there). Each agent's budget,
// branch and diff stat are in its row, the team's totals and budget in
// the header.
//
// It is a server on the user's machine, so it trusts nothing it is
// sent. Every request must carry the random token of the address `view`
// printed (?token=, as Jupyter does) and name 127.0.0.1:port as its Host
// (a page of another site whose DNS name was rebound to 127.0.0.1 names
// its own host); an answer to an approval, the only request that changes
// anything, must also come from this page (its Origin) and carry a page
// token this server handed out with the page, and is taken once (a replay
// is refused here; the serve that owns the approval refuses any answer
// after the first, whichever way it came). Responses forbid framing,
// cross-origin reads and referrers, and nothing is served to another
// origin (no CORS).
//
// An answer goes back to the serve that owns the approval, on its feed,
// into the same queue agent_respond answers; the audit says it came from
// the view.
package view
