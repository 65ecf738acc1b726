// Package realcodex helps tests run the real Codex CLI offline, against the
// loopback model mock of package mockmodel.
//
// A test asks for a binary with [Bin] (skipped loudly when the binary is not
// installed, failed when ATM_REQUIRE_REAL_CODEX=1), prepares a CODEX_HOME with
// [NewHome] (config.toml pointing at the mock, a work dir for threads, all
// removed at cleanup), and spawns Codex with [Start], which supervises the
// process group and stops it at cleanup:
//
//	mock, _ := mockmodel.Start(mockmodel.Config{})
//	defer mock.Close()
//	home := realcodex.NewHome(t, mock.URL(), nil)
//	p := realcodex.Start(t, home, realcodex.Bin(t, realcodex.MCPServer), "mcp-server")
//	// write NDJSON to p.Stdin, read lines from p.Stdout
//
// [NewHome]'s cleanup also fails the test when a process that carries the
// home in its environment (Codex, a shell command it ran, a tool server
// started by [Home.ToolServer]) is still alive, and kills it.
//
// For per-thread MCP servers, [Home.ToolServer] returns an mcp_servers entry that
// makes Codex re-execute the test binary as a tiny stdio MCP server offering
// one tool, echo_identity; the test binary's TestMain must call
// [MaybeServeTools] first.
//
// CODEX_HOME must not be under /tmp (Codex refuses to create its helper
// binaries there), so homes live in the repository's git-ignored .cache
// folder (found by walking up to go.work), or in
// $HOME/.cache/atm-agent-mcp-test outside a checkout (or when the checkout
// is under /tmp), or in /var/tmp/atm-agent-mcp-test-<uid> when HOME is
// under /tmp too.
package realcodex
