package sshhost

import (
	"context"
	"fmt"
	"strings"
)

// Reap stops the agents that instance left running on the host: for each
// of its pid files whose process is still that session's wrapper, SIGTERM
// to the wrapper's process group, SIGKILL after Config.ReapGrace to what
// is left; every pid file of the instance is removed. It returns the
// sessions it stopped. The supervisor reaps Config.Instance by itself at
// each connection and at Close; Reap is for other instances (a serve
// that died) and for tests.
func (h *Host) Reap(ctx context.Context, instance string) ([]string, error) {
	if !tagRE.MatchString(instance) {
		return nil, h.err("reap", "", fmt.Errorf("instance %q: %s", instance, tagRule))
	}
	if err := h.ready("reap"); err != nil {
		return nil, err
	}
	return h.reap(ctx, instance)
}

func (h *Host) reap(ctx context.Context, instance string) ([]string, error) {
	tenths := fmt.Sprint(max(int(h.cfg.reapGrace().Milliseconds()/100), 1))
	out, err := h.run(ctx, "reap "+instance, remote(reapScript, "atm-agent-mcp-reap", instance, tenths))
	if err != nil {
		return nil, err
	}
	var stopped []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "stopped" {
			stopped = append(stopped, f[1])
		}
	}
	return stopped, nil
}
