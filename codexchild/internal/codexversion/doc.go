// Package codexversion holds the Codex CLI versions the module knows about
// (the supported floor and the two versions make test runs) and compares
// Codex version strings. It is the one place these versions are written
// down: the backends, mockcodex (which impersonates the tested versions),
// the real-Codex test helpers of package realcodex and the doctor read
// them from here, and a test keeps the Makefile's pins equal to them.
package codexversion
