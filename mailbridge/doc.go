// Package mailbridge turns team mail addressed to a bound identity into
// Codex turns.
package mailbridge
