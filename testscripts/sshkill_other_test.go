//go:build !linux

package testscripts

// killMaster finds nothing outside Linux (it reads /proc).
func killMaster(int) []int { return nil }

// masterSockets finds nothing outside Linux (it reads /proc).
func masterSockets(int) []string { return nil }
