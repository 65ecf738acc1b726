package testscripts

import (
	"bytes"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// killMaster kills (SIGKILL) every ssh master connection (ssh -M) that
// descends from the process root, and returns their pids.
func killMaster(root int) []int {
	var killed []int
	for pid := range masters(root) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}

// masterSockets returns the control sockets (their -S) of the ssh master
// connections that descend from the process root.
func masterSockets(root int) []string {
	var socks []string
	for _, argv := range masters(root) {
		if i := slices.Index(argv[:len(argv)-1], "-S"); i >= 0 {
			socks = append(socks, argv[i+1])
		}
	}
	return socks
}

// masters yields the pid and the arguments of every ssh master connection
// (ssh -M) that descends from the process root.
func masters(root int) iter.Seq2[int, []string] {
	return func(yield func(int, []string) bool) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err != nil {
				continue
			}
			argv := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
			if len(argv) < 2 || filepath.Base(argv[0]) != "ssh" || argv[1] != "-M" || !descends(pid, root) {
				continue
			}
			if !yield(pid, argv) {
				return
			}
		}
	}
}

// descends reports whether pid is root or one of its descendants.
func descends(pid, root int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return false
		}
		j := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[j+1:]))
		if j < 0 || len(f) < 2 {
			return false
		}
		if pid, err = strconv.Atoi(f[1]); err != nil {
			return false
		}
	}
	return false
}
