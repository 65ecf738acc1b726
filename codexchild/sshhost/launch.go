package sshhost

import (
	"fmt"
	"strconv"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/internal/childproc"
)

// Launcher returns the childproc launcher that starts a command on the
// host, over the master connection, as an agent of Config.Instance: each
// command it launches is a session of its own, named prefix-<n> (n counts
// the Host's launches from 1), whose pid file the wrapper keeps on the
// host while it runs (Command), so that Reap finds it after a drop. The
// command's Spec.AddEnv crosses in the wrapper's stdin preamble and its
// Spec.Dir is a directory on the host ("" is the home there); Spec.Env,
// this machine's environment, does not cross: it stays ssh's. The guard
// (childproc.Config.Guard) wraps ssh here, so ssh dies with this process;
// the agent on the host then gets its stdin's end, and Reap stops what
// remains.
//
// A launch fails when Config.Instance is empty or prefix is not a tag
// (letters, digits, '_', '@', '.', '+' or '-').
func (h *Host) Launcher(prefix string) childproc.Launcher {
	return func(s childproc.Spec) (childproc.Spec, error) {
		if h.cfg.Instance == "" {
			return childproc.Spec{}, fmt.Errorf("sshhost: host %q: no Config.Instance to start agents as", h.cfg.Name)
		}
		tag := Tag{Instance: h.cfg.Instance, Session: prefix + "-" + strconv.FormatInt(h.launches.Add(1), 10)}
		c, err := h.Command(tag, Command{Path: s.Path, Args: s.Args, Env: s.AddEnv, Dir: s.Dir})
		if err != nil {
			return childproc.Spec{}, err
		}
		return childproc.Spec{Path: c.Path, Args: c.Args, Stdin: c.Stdin}, nil
	}
}
