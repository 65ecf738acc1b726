//go:build linux

package sshtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Processes returns the live processes (not zombies) of the server's
// sessions: those whose environment has TagEnv=s.Dir.
func (s *Server) Processes() []Proc {
	mark := []byte(TagEnv + "=" + s.Dir)
	self := os.Getpid()
	var found []Proc
	for _, pid := range pids() {
		if pid == self {
			continue
		}
		base := filepath.Join("/proc", strconv.Itoa(pid))
		env, err := os.ReadFile(filepath.Join(base, "environ"))
		if err != nil || len(env) == 0 {
			continue // gone, not ours, or a zombie
		}
		if !bytes.Contains(append(append([]byte{0}, env...), 0), append(append([]byte{0}, mark...), 0)) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(base, "cmdline"))
		found = append(found, Proc{PID: pid, Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
	}
	return found
}

// children returns the pids whose parent is ppid.
func children(ppid int) []int {
	var out []int
	for _, pid := range pids() {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 2 && f[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out
}

func pids() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
