package sshhost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
)

// Forward is a reverse forward over the master connection: a port on the
// host's loopback (127.0.0.1) that reaches an address on this machine.
// The supervisor makes it again after each reconnect, on the same port
// when the host still has it free, else on a new one (logged; Port says
// which).
type Forward struct {
	h     *Host
	local string
	// Guarded by h.mu:
	spec string // the -R spec it was made with, which cancels it
	port int    // the port on the host
}

// Forward makes a reverse forward from a free port on the host's loopback
// to local (host:port on this machine, usually a loopback address) and
// returns it; Forward.Port is the port on the host.
func (h *Host) Forward(ctx context.Context, local string) (*Forward, error) {
	op := "forward to " + local
	if _, port, err := net.SplitHostPort(local); err != nil || port == "" || port == "0" {
		return nil, h.err(op, "", fmt.Errorf("want a local host:port"))
	}
	if err := h.ready(op); err != nil {
		return nil, err
	}
	spec, port, err := h.forward(ctx, local, 0)
	if err != nil {
		return nil, err
	}
	f := &Forward{h: h, local: local, spec: spec, port: port}
	h.mu.Lock()
	h.forwards[f] = struct{}{}
	h.mu.Unlock()
	h.log.Info("reverse forward made", "local", local, "remote_port", port)
	return f, nil
}

// Port is the forward's port on the host's loopback.
func (f *Forward) Port() int {
	f.h.mu.Lock()
	defer f.h.mu.Unlock()
	return f.port
}

// Local is the address on this machine that the forward reaches.
func (f *Forward) Local() string { return f.local }

// Close cancels the forward: its port on the host is closed, and it is no
// longer made again after a reconnect.
func (f *Forward) Close(ctx context.Context) error {
	h := f.h
	h.mu.Lock()
	_, ok := h.forwards[f]
	delete(h.forwards, f)
	spec, up := f.spec, h.up
	h.mu.Unlock()
	if !ok || !up {
		return nil // gone with the connection it was made on
	}
	_, err := h.control(ctx, "cancel", "-R", spec)
	return err
}

// forward asks the master for a reverse forward from port on the host
// (0: a free one) to local, and returns its spec and the port.
func (h *Host) forward(ctx context.Context, local string, port int) (string, int, error) {
	spec := fmt.Sprintf("127.0.0.1:%d:%s", port, local)
	out, err := h.control(ctx, "forward", "-R", spec)
	if err != nil {
		return "", 0, err
	}
	if port != 0 {
		return spec, port, nil
	}
	got, perr := strconv.Atoi(strings.TrimSpace(out))
	if perr != nil || got <= 0 {
		return "", 0, h.err("forward to "+local, "", fmt.Errorf("%w: ssh said %q, not the port it allocated", ErrSSH, out))
	}
	return spec, got, nil
}

// remakeForwards makes every forward again on a new master connection:
// on its port when the host still has it, else on a new one.
func (h *Host) remakeForwards(ctx context.Context) error {
	h.mu.Lock()
	fs := make([]*Forward, 0, len(h.forwards))
	for f := range h.forwards {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	for _, f := range fs {
		old := f.Port()
		spec, port, err := h.forward(ctx, f.local, old)
		if err != nil {
			h.log.Warn("reverse forward's port is taken on the host; making it on another", "local", f.local, "remote_port", old, "err", err)
			if spec, port, err = h.forward(ctx, f.local, 0); err != nil {
				return err
			}
		}
		h.mu.Lock()
		f.spec, f.port = spec, port
		h.mu.Unlock()
		h.log.Info("reverse forward made again", "local", f.local, "remote_port", port, "was", old)
	}
	return nil
}

// CheckForwards makes again, on their ports, the reverse forwards that are
// gone from the host while the connection is up (cancelled with `ssh -O
// cancel`, or dropped by the server): each forward is probed through the
// master (`ssh -W 127.0.0.1:<port>`, a connection from the host's loopback
// to its port, which the host refuses once the forward is gone) and a
// forward that does not answer is asked of the master again. It returns
// the ports made again; a reconnect makes every forward again by itself.
// It fails at once, with ErrDown, while the connection is down.
func (h *Host) CheckForwards(ctx context.Context) ([]int, error) {
	if err := h.ready("check forwards"); err != nil {
		return nil, err
	}
	h.mu.Lock()
	fs := make([]*Forward, 0, len(h.forwards))
	for f := range h.forwards {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	var remade []int
	var errs []error
	for _, f := range fs {
		port := f.Port()
		if h.probe(ctx, port) {
			continue
		}
		if err := h.ready("check forwards"); err != nil {
			return remade, err // the connection went, not the forward
		}
		h.log.Warn("reverse forward gone from the host: making it again", "local", f.local, "remote_port", port)
		spec, got, err := h.forward(ctx, f.local, port)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.mu.Lock()
		if _, live := h.forwards[f]; live {
			f.spec, f.port = spec, got
		}
		h.mu.Unlock()
		remade = append(remade, got)
	}
	return remade, errors.Join(errs...)
}

// probe reports whether the host's loopback port answers, reached from
// the host through the master connection (ssh -W): a forward that is
// there does.
func (h *Host) probe(ctx context.Context, port int) bool {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.connectTimeout())
	defer cancel()
	args := append(h.muxArgs(), "-W", "127.0.0.1:"+strconv.Itoa(port), "--", h.cfg.Dest)
	cmd := exec.CommandContext(ctx, h.cfg.ssh(), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		h.log.Debug("reverse forward probe failed", "remote_port", port, "err", err, "stderr", strings.TrimSpace(stderr.String()))
	}
	return err == nil
}
