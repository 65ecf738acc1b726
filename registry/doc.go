// Package registry keeps the proxy's durable session registry, identity
// claims, audit log and summaries under {home}/.config/atm/agent-sessions.
package registry
