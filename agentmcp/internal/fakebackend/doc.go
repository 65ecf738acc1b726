// Package fakebackend is the in-process agent backend (a backend.Backend)
// that the tests of session, tools and proxy script, so that their
// behaviours of a turn are one vocabulary with one set of tests of its own
// instead of three fakes that drifted apart. It is test support: no
// package but tests imports it (agentmcp's TestWingImports).
//
// It stands where serve's Codex child stands: it embeds codexchild.Codex,
// so the seam sees a Codex backend's capabilities (sandboxed, Codex's
// settings, restarted as a whole, named "Codex"), and it is a
// codexchild.Passthrough, a backend.Starter and a backend.Availability. A
// test that wants fewer capabilities wraps it (session's plainBackend), one
// that wants more embeds it (a Steerer, a Forker).
//
// # A turn's script
//
// The last line of a turn's prompt picks what the turn does (an output
// schema told at the end of the prompt is not a line of it):
//
//   - default: the result "echo: <last line>" at once;
//   - "BLOCK…": waits until a test's Answer gives it its result text, it
//     is interrupted, its context ends or its Timeout passes (a
//     *backend.TimeoutError with the partial text "partial text");
//   - "APPROVE": asks an exec approval of "touch x" in the thread's cwd
//     and answers "decision: <kind> <reason>";
//   - "ASK n": asks n approvals of "make 1" … "make n" in /src, one after
//     the other, and answers "decisions: <kind>[: <reason>]; …";
//   - "DIE": the child dies after the request was written, before it
//     acknowledged the turn (OnSent, no OnAccepted, an *ExitError);
//     "DIE_ACCEPTED": it dies after it acknowledged the turn;
//   - "TOKENS n": the thread's token totals grow by n (9/10 input, 1/10
//     output), told in an event; "TOKENS_BLOCK n": the same, then BLOCK;
//   - "EVENTS=n": n more events (agent_message_content_delta) first;
//   - "UNREACHABLE" and "UNREACHABLE_APP": a retry notice as mcp-server
//     and app-server send it when Codex cannot reach its model, then a
//     *backend.TimeoutError;
//   - "FAIL": an isError result ("model error");
//   - "FAIL_START", on a new thread: the error of a Codex that cannot
//     start (executable file not found), before a thread was made or
//     anything sent.
//
// Whatever the last line, a line "ANSWER=<text>" makes text the result,
// and each line "SAY <text>" is an agent message of the turn (an event the
// backend translated itself). Every turn tells task_started (a codex/event,
// translated by codexchild.Translate) before it does what its line says,
// and task_complete when it answers; after the events of its start a
// backend.Flusher handler hears Flush, as from a reader that ran dry.
//
// # Threads
//
// A turn without a thread runs on a new one, "thread-<n>", named to
// OnThread first. What happens to a turn that names a thread is the
// policy of Config.Protocol: by default the thread continues (unless the
// test lost it, Lose: then a new thread replaces it, the Result's Replaced
// saying "lost by the fake"); codexchild.KindMCPServer's policy is
// mcp-server's (a thread this backend never ran, or whose last turn was
// interrupted, gives way to a fresh thread, seeded with the turn's Seed,
// and every result goes to OnResult first, from another goroutine, as from
// codexchild's reader); codexchild.KindAppServer's is app-server's (such a
// thread is resumed). A continued thread gets the Preamble before the
// prompt under either protocol, as codexchild's backends send it.
//
// # Design notes
//
// One mutex guards the fake's state; it is never held while the fake
// calls back into the caller (OnThread, OnResult, the handler) or waits.
// A turn's waits end with its context, so no turn outlives its caller.
package fakebackend
