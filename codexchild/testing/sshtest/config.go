package sshtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The files of a server, in Server.Dir.
const (
	hostKeyFile     = "host_ed25519"
	userKeyFile     = "user_ed25519"
	authorizedFile  = "authorized_keys"
	knownHostsFile  = "known_hosts"
	serverConfFile  = "sshd_config"
	clientConfFile  = "ssh_config"
	serverLogFile   = "sshd.log"
	remoteHomeDir   = "home"
	defaultRemoteOS = "/usr/bin:/bin"
)

// serverConfig is the sshd_config of s on port.
func (s *Server) serverConfig(port int, opts Options) string {
	path := strings.Join(append(append([]string(nil), opts.Path...), defaultRemoteOS), ":")
	env := []string{"HOME=" + s.Home, "PATH=" + path, TagEnv + "=" + s.Dir}
	env = append(env, opts.Env...)
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("# written by sshtest for one test")
	line("ListenAddress 127.0.0.1")
	line("Port %d", port)
	line("HostKey %s", filepath.Join(s.Dir, hostKeyFile))
	line("AuthorizedKeysFile %s", filepath.Join(s.Dir, authorizedFile))
	line("StrictModes no")
	line("UsePAM no")
	line("PubkeyAuthentication yes")
	line("PasswordAuthentication no")
	line("KbdInteractiveAuthentication no")
	line("PermitRootLogin prohibit-password")
	line("PermitUserRC no")
	line("PermitUserEnvironment no")
	line("AllowTcpForwarding yes")
	line("AllowStreamLocalForwarding no")
	line("X11Forwarding no")
	line("PrintMotd no")
	line("PidFile none")
	line("LogLevel INFO")
	line("MaxSessions 100")
	line("MaxStartups 100")
	line("SetEnv %s", quoteEach(env))
	return b.String()
}

// clientConfig is the file for `ssh -F`: Host s.Alias is the server on
// port, as user.
func (s *Server) clientConfig(port int, user string) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("# written by sshtest for one test: ssh -F %s %s", filepath.Join(s.Dir, clientConfFile), s.Alias)
	line("Host %s", s.Alias)
	line("  HostName 127.0.0.1")
	line("  Port %d", port)
	line("  User %s", user)
	line("  IdentityFile %s", filepath.Join(s.Dir, userKeyFile))
	line("  IdentitiesOnly yes")
	line("  IdentityAgent none")
	line("  UserKnownHostsFile %s", filepath.Join(s.Dir, knownHostsFile))
	line("  GlobalKnownHostsFile /dev/null")
	line("  StrictHostKeyChecking yes")
	line("  UpdateHostKeys no")
	line("  CheckHostIP no")
	line("  BatchMode yes")
	line("  LogLevel ERROR")
	return b.String()
}

// knownHosts is the known_hosts line of the server's host key on port.
func knownHosts(port int, hostPub string) string {
	f := strings.Fields(hostPub)
	if len(f) >= 2 {
		hostPub = f[0] + " " + f[1]
	}
	return fmt.Sprintf("[127.0.0.1]:%d %s\n", port, hostPub)
}

// quoteEach double-quotes each of words, as sshd_config takes an argument
// with spaces.
func quoteEach(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = `"` + w + `"`
	}
	return strings.Join(q, " ")
}

func writeFile(path, text string) error {
	return os.WriteFile(path, []byte(text), 0o600)
}
