package sshhost

import (
	"fmt"
	"strings"
)

// Command is a command to run: a program, its arguments, the environment
// to add and the working directory.
type Command struct {
	// Path is the program: on the host, a name looked up in the PATH
	// there, or a path there.
	Path string
	// Args are its arguments, without the program.
	Args []string
	// Env are KEY=VALUE entries added to the environment (on the host,
	// to the host's: nothing of this machine's environment crosses).
	// optional.
	Env []string
	// Dir is the working directory (on the host, a path there; "" means
	// $HOME there). optional.
	Dir string
	// Stdin is what must be written to the command's stdin before
	// anything else. optional.
	Stdin []byte
}

// Tag names an agent's process on the host: its pid file there is
// $HOME/.atm-agent-mcp/run/<Instance>/<Session>.pid, and Reap(Instance)
// stops it. Both are letters, digits, '_', '@', '.', '+' or '-'.
type Tag struct {
	// Instance is the serve instance that starts the agent.
	Instance string
	// Session is the agent's session.
	Session string
}

// Command returns the command to start here so that c runs on the host,
// over the master connection: `ssh -S <socket> … -T <dest> -- <wrapper>`,
// the environment of ssh being this process's (Env and Dir are nil and
// ""). The wrapper (agentScript) gets c's environment on stdin (the
// returned Stdin, to write before anything else), changes into c.Dir
// (exit status 125 when it is missing), writes the tag's pid file, and
// runs the program; ssh passes stdin, stdout, stderr, stdin's end and the
// exit status on.
//
// Command does not connect: started while the connection is down, the
// returned command fails at once (exit status 255), saying the master
// connection for the host is down.
func (h *Host) Command(tag Tag, c Command) (Command, error) {
	if !tagRE.MatchString(tag.Instance) || !tagRE.MatchString(tag.Session) {
		return Command{}, fmt.Errorf("sshhost: host %q: tag %q/%q: %s", h.cfg.Name, tag.Instance, tag.Session, tagRule)
	}
	if c.Path == "" || strings.Contains(c.Path, "=") {
		return Command{}, fmt.Errorf("sshhost: host %q: program %q: want a name or a path, without '='", h.cfg.Name, c.Path)
	}
	if len(c.Stdin) > 0 {
		return Command{}, fmt.Errorf("sshhost: host %q: a command with a stdin preamble of its own cannot be wrapped", h.cfg.Name)
	}
	pre, err := envPreamble(c.Env)
	if err != nil {
		return Command{}, fmt.Errorf("sshhost: host %q: %w", h.cfg.Name, err)
	}
	for _, w := range append([]string{c.Path, c.Dir}, c.Args...) {
		if strings.Contains(w, "\x00") {
			return Command{}, fmt.Errorf("sshhost: host %q: an argument holds a NUL byte", h.cfg.Name)
		}
	}
	args := append([]string{tag.Instance, tag.Session, c.Dir, c.Path}, c.Args...)
	line := remote(agentScript, tagPrefix+tag.Instance+"/"+tag.Session, args...)
	return Command{
		Path:  h.cfg.ssh(),
		Args:  append(h.muxArgs(), "--", h.cfg.Dest, line),
		Stdin: pre,
	}, nil
}

// envPreamble is the wrapper's stdin preamble for env: one KEY=VALUE line
// each, then an empty line.
func envPreamble(env []string) ([]byte, error) {
	var b strings.Builder
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !envNameRE.MatchString(k) {
			return nil, fmt.Errorf("environment entry %q: want KEY=VALUE with a KEY of letters, digits and '_'", kv)
		}
		if strings.ContainsAny(kv, "\n\x00") {
			return nil, fmt.Errorf("environment entry %s: a value with a newline or a NUL byte cannot be passed", k)
		}
		b.WriteString(kv)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return []byte(b.String()), nil
}
