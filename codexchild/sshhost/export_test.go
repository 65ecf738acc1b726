package sshhost

// ControlSocket is h's control socket, for tests that act on its master
// connection behind its back (ssh -O cancel).
func ControlSocket(h *Host) string { return h.ctl }
