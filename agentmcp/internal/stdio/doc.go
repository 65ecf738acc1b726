// Package stdio gives serve and its logger handles of their own on stdio
// pipes, non-blocking, so that reading the client, writing to it and
// logging to stderr are raw system calls that wait in Go's poller only when
// a pipe is empty or full (Linux; elsewhere stdio is used as it is).
package stdio
