//go:build !linux

package realcodex

import "testing"

// Processes returns nil: finding a home's processes needs Linux's /proc.
func (h *Home) Processes() []string { return nil }

func checkLeaks(testing.TB, *Home) {}
