// Package sshtest starts a private OpenSSH server on loopback for tests of
// agents on another host: Debian's openssh-server (/usr/sbin/sshd, which
// `make sshd` installs), a host key and a user key made for the test, and
// a second home directory that stands for the remote host. It is test
// support only, public (as realcodex and realacp are) so that the tests
// of codexchild, agentmcp and testscripts run against the same server.
//
//	srv := sshtest.Start(t, &sshtest.Options{Path: []string{binDir}})
//	out, _ := exec.Command("ssh", append(srv.SSHArgs(), srv.Alias, "echo $HOME")...).Output()
//	// out is srv.Home
//
// Why it is shaped so:
//
//   - The server runs as the test's own user with its own sshd_config:
//     ListenAddress 127.0.0.1 and a free port, the test's host key, an
//     absolute AuthorizedKeysFile holding the test's user key, no PAM, no
//     passwords, StrictModes off (the keys live in a temporary directory)
//     and no pid file, so nothing of the machine's own ssh setup (none
//     needs to run) is used or changed.
//   - The remote host is a second home: sshd's SetEnv gives every session
//     HOME=[Server.Home] and a PATH of [Options.Path] before /usr/bin:/bin,
//     so what a test puts there is what "the host" has.
//   - The client side is a file for `ssh -F` ([Server.ClientConfig]; the
//     Host [Server.Alias], "box"), because ssh reads ~/.ssh from the
//     user's passwd entry, not from $HOME: the test cannot point it at a
//     temporary ~/.ssh. The file pins the key (IdentitiesOnly, no agent),
//     the host key (a known_hosts of its own, StrictHostKeyChecking yes)
//     and BatchMode, so a test never prompts.
//   - Every session carries [TagEnv]=[Server.Dir] in its environment. At
//     cleanup ([Server.Close]) the server and its connections are killed,
//     and a process of a session still alive after a grace fails the test
//     and is killed (Linux): "nothing left running on the host" is checked by every test
//     that uses the server. [Server.Processes] lists them at any time.
//   - Faults are the test's to make: [Server.DropConnections] kills the
//     server's side of every connection (the sessions' commands live on,
//     as on a real host after a network drop), [Server.Stop] and
//     [Server.Restart] take the host away and bring it back on the same
//     port.
//
// [Start] skips the test under -short (make check) and, loudly, when
// sshd, ssh or ssh-keygen is missing; with ATM_REQUIRE_REAL_CODEX=1 (CI) a
// missing program fails the test instead. Where there is no testing.TB
// (a testscript command), [New] and [Server.Close] do the same work in a
// directory of the caller's, [Missing] says what is not installed, and
// Close's error names what was left running.
package sshtest
