// Package mockmodel is a program that serves the loopback model mock of
// package modelmock, the OpenAI Responses API and the Anthropic Messages
// API, for end-to-end tests written in other languages and for humans
// running the real Codex CLI or claude-agent-acp offline.
//
// [Main] is the whole program. The command codexchild/cmd/mockmodel (make
// build: bin/mockmodel) only calls it; a test binary can run it as a
// command of its own (in testscripts, one registered with testscript.Main).
//
// Usage:
//
//	mockmodel [-addr 127.0.0.1:0] [-log requests.jsonl] [-v] [-watch-stdin=true]
//
// The first line on stdout is the base URL ("http://127.0.0.1:PORT/v1"), to
// use as a Codex provider's base_url, and without its "/v1" as
// ANTHROPIC_BASE_URL; nothing else is written to stdout. The
// mock then serves until SIGTERM or SIGINT, or until stdin reaches EOF (so a
// parent that dies takes it down). Run it in the background of a shell with
// -watch-stdin=false, since such a job's stdin is /dev/null. Diagnostics go
// to stderr; -v adds a line per request.
package mockmodel
