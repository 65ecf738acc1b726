// Package realacp helps tests run real ACP agents (claude-agent-acp,
// opencode) offline: it installs their pinned npm packages and serves the
// model APIs they call from loopback mocks. It is test support only, public
// (as realcodex is) so that the testscripts module runs the same agents
// and mocks through serve.
//
// [Install] installs an agent's npm project (package.json and
// package-lock.json under testdata/<name>, embedded) with npm ci into the
// repository's git-ignored .cache/acp/<name>, once per lock file, and
// returns a path inside it; a missing node or npm skips the test loudly, or
// fails it under ATM_REQUIRE_REAL_CODEX=1:
//
//	bin := realacp.Install(t, "claude-agent-acp", "node_modules/.bin/claude-agent-acp")
//	mock := realacp.StartAnthropic(t) // ANTHROPIC_BASE_URL=mock.URL()
//
// The mocks are scripted by keywords in the last user message, so that a
// test's prompts say what the model does (reply, call a tool, hang):
// [Anthropic] speaks Anthropic Messages (streamed SSE or whole).
package realacp
