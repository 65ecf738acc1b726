//go:build !linux

package mockcodex

import "syscall"

// resetSignal is a no-op outside Linux: the caller exits with 128+sig if the
// signal did not kill the process.
func resetSignal(syscall.Signal) {}
