// Package outputschema checks an agent's final answer against the JSON
// Schema a caller asked for (structured output).
//
// Some agents can be constrained to a schema (Codex app-server's
// outputSchema: the model is made to answer in it), others cannot; either
// way the caller checks the answer here, once, the same way for every
// kind, so that a result's structured output is always JSON that matched
// the schema, and a mismatch is one clear error. That is why this is a
// package of its own and not part of a backend: the backends only pass
// the schema on where their agent takes one. It lives under the seam
// (codexchild/backend) because it is shared by every kind as the seam is:
// the domain (session, tools) checks answers with it, and like the seam it
// knows no kind's package (agentmcp/layers_test.go).
//
// [Compile] reads a schema (draft 2020-12, or draft-07 when its $schema
// says so; references only within the schema itself) and refuses one it
// cannot check answers against (ErrInvalidSchema). [Schema.Check] reads an
// answer as JSON, also from inside a Markdown code fence (how models that
// were only asked for JSON often write it), and validates it
// (ErrMismatch).
//
// The validator is github.com/google/jsonschema-go: no dependencies of its
// own, both drafts that clients send, and the library the MCP Go SDK uses
// for tool schemas.
package outputschema
