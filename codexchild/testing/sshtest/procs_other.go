//go:build !linux

package sshtest

// Processes returns nil: finding a session's processes needs Linux's
// /proc.
func (s *Server) Processes() []Proc { return nil }

// children returns nil: it needs Linux's /proc.
func children(int) []int { return nil }
