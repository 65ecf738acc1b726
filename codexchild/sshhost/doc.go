// Package sshhost runs things on another host over OpenSSH's ssh: the
// agents of a team that outgrew one machine, and the git and version
// checks that go with them. It runs the user's own ssh, with the user's
// ~/.ssh/config, keys, agent and jump hosts, and reimplements none of it.
//
// A [Host] ([New], a [Config]: the host's name, its ssh destination, more
// ssh arguments) keeps one master connection to the host (ssh -M -N with
// a control socket in a short local directory, keep-alives,
// ExitOnForwardFailure, BatchMode so nothing ever prompts), supervised: it
// is made again with backoff each time it drops, and [Host.Up] waits for
// it ([Host.Attempt]: for it, or for the next attempt's failure). Everything else rides on it (ssh -S <socket>), so an agent starts
// without a new handshake and a JSON-RPC round trip pays only the
// channel:
//
//   - [Host.Command] is a launcher: it turns a local command (program,
//     arguments, the environment entries the caller added, a directory
//     on the host) into `ssh -S … -T <dest> -- <wrapper>`, which the
//     caller starts and supervises as any child (codexchild's childproc:
//     ssh passes stdin, stdout, stderr, stdin's end and the exit status
//     on; the local guard and process group are ssh's). The wrapper is a
//     fixed POSIX sh program: it reads the environment to add from stdin
//     (a preamble the caller writes first, so no other user of the host
//     reads it in ps, and nothing of this machine's environment crosses),
//     changes into the directory (exit 125 when it is missing), writes
//     the session's pid file ($HOME/.atm-agent-mcp/run/<instance>/<session>.pid
//     on the host) and runs the agent.
//   - [Host.Launcher] is that launcher as childproc takes it, for the
//     backends (codexchild.Config.Host, acpbackend.Config.Host): each
//     command it launches is a session of Config.Instance of its own.
//   - [Host.Run] runs a command there to its end (git, sh, --version);
//     [Host.Exec] too, with the environment added in the wrapper's stdin
//     preamble, its stdin, stdout and stderr streamed, and (with
//     Config.Instance) a pid file there while it runs, so that a command
//     whose context ends is reaped there, not only its ssh here: the git
//     and sh of a host's worktrees. [ExitCode] tells the command's own
//     exit status from ssh's failure.
//   - [Host.Forward] makes a reverse forward (-O forward -R
//     127.0.0.1:0:<local>): the team-mail tool server on this machine's
//     loopback appears on the host's, at the port ssh allocated; it is
//     made again after a reconnect, on the same port when it is free;
//     [Host.CheckForwards] finds a forward gone from the host while the
//     connection stays (cancelled, dropped by sshd: a probe of its port
//     through the master, ssh -W) and makes it again on its port.
//   - [Host.Reap] stops the agents an instance left on the host, from
//     their pid files (SIGTERM, then SIGKILL, to each wrapper's process
//     group; a reused pid is recognised by the wrapper's tag in its
//     command line and left alone). The supervisor reaps Config.Instance
//     at each connection, before Up returns (an agent whose connection
//     dropped is never left orphaned) and at [Host.Close];
//     [Host.Instances] lists the instances with pid files there, for a
//     caller that knows which of them are gone (a serve killed with
//     SIGKILL) and reaps those.
//
// [Host.State] and [Host.Err] tell whether the connection is up, and why
// not, without waiting: what a caller that follows the host (its agents'
// availability, mail waiting for them) watches.
//
// Why it is shaped so:
//
//   - One connection per host, not one per agent: faults are per host
//     (when it drops every agent there fails at once, with an error that
//     names the host and carries what ssh said, [Error]), a reconnect is
//     one thing to wait for, and a command started while the master is
//     down fails at once rather than making a connection of its own (its
//     ssh has a ProxyCommand that refuses).
//   - Commands over the master have no configuration of their own (-F
//     /dev/null): the user's configuration applies to the master, once;
//     SendEnv and the like cannot leak this machine's environment.
//   - Only argument lists cross: every word is quoted for a POSIX shell
//     ([Quote], [Join]) into `exec /bin/sh -c <fixed script> …`, so the
//     login shell on the host only splits words and the same sh runs
//     whatever it is (sh, bash, dash, zsh, ksh; not csh).
//   - The pid files are the host's own record of what runs there, so a
//     serve that lost its connection, or died, finds and stops its agents
//     on the next connection without asking this machine's memory.
//
// The tests run against a real sshd on loopback (codexchild/testing/sshtest).
package sshhost
