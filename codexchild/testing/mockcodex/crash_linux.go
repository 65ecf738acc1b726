//go:build linux

package mockcodex

import (
	"syscall"
	"unsafe"
)

// resetSignal restores the default action of sig, so that raising it kills
// the process the way it kills a Rust program (the Go runtime otherwise
// handles SIGSEGV, SIGQUIT, ... itself).
func resetSignal(sig syscall.Signal) {
	// struct kernel_sigaction on linux/amd64 and linux/arm64: handler,
	// flags, restorer, mask; handler 0 is SIG_DFL.
	var act [4]uint64
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
}
