// Package childproc holds what every supervised child of this module needs
// alike, whatever protocol it speaks (the Codex child in codexchild, an
// agent in codexchild/acp): the limiter for lines of its stdout that are
// not JSON-RPC (Garbage), and, on Linux, the start of a guarded child from
// a thread that lives as long as the process (StartFromLastingThread,
// SetParentDeathSignal).
package childproc
