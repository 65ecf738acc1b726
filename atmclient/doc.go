// Package atmclient reads and writes ATM team inboxes under
// {home}/.claude/teams, compatible with the atm CLI and Claude Code.
package atmclient
