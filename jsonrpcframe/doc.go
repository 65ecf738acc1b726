// Package jsonrpcframe reads and writes JSON-RPC 2.0 messages over a byte
// stream in the two framings MCP peers use: newline-delimited JSON (the MCP
// stdio transport, and the only framing Codex speaks) and Content-Length
// headers (LSP-style clients).
//
// A [Message] keeps what a proxy does not change byte-exact: the id exactly as
// sent (any size of integer, negative, string or null), params, result and
// error as raw JSON, any other top-level members, and whether the
// "jsonrpc":"2.0" member was present (Codex's app-server omits it and must not
// get it back unasked).
//
// A [Reader] returns one message per call; a [Writer] writes one message per
// call and is safe for concurrent use. [NewLineReader], [NewHeaderReader],
// [NewLineWriter] and [NewHeaderWriter] build one framing each; [NewAuto]
// detects the framing from the first non-whitespace byte of the stream and
// returns a writer that answers in the same framing. Over OS pipes (stdio),
// [NewPipe] and [PipeReader] give the reader and writer a cheaper way to
// the pipe than *os.File (raw system calls on Linux).
//
// # Bad input
//
// Nothing a peer sends stops a reader: a line that is not JSON, a JSON value
// that is not a JSON-RPC message, a batch, a message over the size limit and a
// bad header block are each reported by Read as a [*MessageError] (test with
// errors.Is against [ErrParse], [ErrInvalid], [ErrBatch], [ErrTooLarge] and
// [ErrHeader]) and the next Read returns the next message. Only the end of
// the stream ([io.EOF], or [io.ErrUnexpectedEOF] inside a message) and errors
// of the underlying reader end it.
//
// # Design notes
//
// Each reader owns one bufio.Reader for its stream and never lets a decoder
// read ahead, so no buffered bytes are lost between messages. There is no
// line-length cap: a message may be as large as [Options.MaxMessageSize]
// (64 MiB by default); a larger one is skipped without being buffered and
// reported as [ErrTooLarge]. A message is validated and split into its
// top-level members in one pass by a small scanner that accepts exactly
// what json.Valid accepts (checked by a fuzz test against it), several
// times faster on long strings; that is what makes relaying messages cheap.
package jsonrpcframe
