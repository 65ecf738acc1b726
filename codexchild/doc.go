// Package codexchild runs and supervises one Codex child process and speaks
// its protocol (codex mcp-server or codex app-server) behind one interface.
package codexchild
