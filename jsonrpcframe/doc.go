// Package jsonrpcframe reads and writes JSON-RPC 2.0 messages over a byte
// stream in the two framings MCP peers use: newline-delimited JSON and
// Content-Length headers.
package jsonrpcframe
