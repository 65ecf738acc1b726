package sshtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Programs the server needs; SSHD is Debian's openssh-server's.
const (
	SSHD   = "/usr/sbin/sshd"
	Keygen = "ssh-keygen"
	SSH    = "ssh"
)

// RequireEnv is the environment variable that turns a missing program
// from a skip into a failure when set to "1" (CI sets it).
const RequireEnv = "ATM_REQUIRE_REAL_CODEX"

// TagEnv is the environment variable sshd sets to Server.Dir in every
// session; it is how the leak check finds what runs "on the host".
const TagEnv = "ATM_SSHTEST"

// readyTimeout is how long a start waits for "Server listening".
const readyTimeout = 10 * time.Second

// leakGrace is how long the cleanup waits for the sessions' processes to
// end.
var leakGrace = 3 * time.Second

// Options adjusts [Start]. A nil *Options means all defaults.
type Options struct {
	// Path are directories put on the sessions' PATH before
	// /usr/bin:/bin: the programs the host has beyond the system's.
	Path []string
	// Env are more KEY=VALUE variables of every session (sshd's SetEnv;
	// no double quote or newline in them).
	Env []string
	// Alias is the Host name of the client config. optional: "" means
	// "box".
	Alias string
}

// Server is a running sshd on loopback and the client setup that reaches
// it. Everything is removed at the test's end.
type Server struct {
	// Dir holds the keys, both configs, known_hosts, the log and Home.
	Dir string
	// Home is the HOME of every session: the remote host's home.
	Home string
	// Port is the server's port on 127.0.0.1.
	Port int
	// Alias is the Host name in ClientConfig ("box"): the destination to
	// give ssh.
	Alias string
	// ClientConfig is the file to give `ssh -F`.
	ClientConfig string
	// User is the login name (the test's own user).
	User string
	// Log is sshd's log (-e), appended to by every start.
	Log string

	opts Options
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

// Missing says what of the programs the server needs is not here ("" when
// all are): sshd, ssh and ssh-keygen.
func Missing() string {
	var problems []string
	if fi, err := os.Stat(SSHD); err != nil || fi.Mode()&0o111 == 0 {
		problems = append(problems, SSHD+" is not installed (Debian's openssh-server)")
	}
	for _, p := range []string{SSH, Keygen} {
		if _, err := exec.LookPath(p); err != nil {
			problems = append(problems, p+" is not on PATH")
		}
	}
	return strings.Join(problems, "; ")
}

// Available reports whether the programs the server needs are here; when
// one is not it skips t loudly, or fails it when ATM_REQUIRE_REAL_CODEX=1.
// Under -short (make check) it always skips.
func Available(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIP ssh: -short (make check) starts no sshd")
	}
	msg := Missing()
	if msg == "" {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("sshd required (%s=1) but unavailable: %s; run `make sshd` as root", RequireEnv, msg)
	}
	t.Skipf("SKIP ssh: %s; run `make test` (it installs openssh-server with `make sshd`, as root)", msg)
}

// Start makes the keys and configs in a temporary directory and starts
// sshd on a free loopback port (see New). At cleanup it closes the server:
// a process of a session still alive after a grace fails the test. It
// skips as [Available] does.
func Start(t testing.TB, opts *Options) *Server {
	t.Helper()
	Available(t)
	s, err := New(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("%v", err)
		}
		if t.Failed() {
			if b, err := os.ReadFile(s.Log); err == nil {
				t.Logf("sshtest: sshd log %s:\n%s", s.Log, tail(b, 40))
			}
		}
	})
	return s
}

// New makes the keys and configs in dir (an empty directory that the
// caller removes) and starts sshd on a free loopback port. Close stops
// it.
func New(dir string, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Alias == "" {
		o.Alias = "box"
	}
	for _, kv := range o.Env {
		if !strings.Contains(kv, "=") || strings.ContainsAny(kv, "\"\n") {
			return nil, fmt.Errorf("sshtest: Options.Env entry %q: want KEY=VALUE without a double quote or newline", kv)
		}
	}
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("sshtest: the current user: %w", err)
	}
	s := &Server{
		Dir:          dir,
		Home:         filepath.Join(dir, remoteHomeDir),
		Alias:        o.Alias,
		ClientConfig: filepath.Join(dir, clientConfFile),
		User:         u.Username,
		Log:          filepath.Join(dir, serverLogFile),
		opts:         o,
	}
	if err := os.Mkdir(s.Home, 0o700); err != nil {
		return nil, fmt.Errorf("sshtest: %w", err)
	}
	for _, k := range []string{hostKeyFile, userKeyFile} {
		out, err := exec.Command(Keygen, "-q", "-t", "ed25519", "-N", "", "-C", "sshtest-"+k, "-f", filepath.Join(dir, k)).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("sshtest: ssh-keygen %s: %w: %s", k, err, out)
		}
	}
	userPub, err := os.ReadFile(filepath.Join(dir, userKeyFile+".pub"))
	if err != nil {
		return nil, fmt.Errorf("sshtest: %w", err)
	}
	if err := writeFile(filepath.Join(dir, authorizedFile), string(userPub)); err != nil {
		return nil, fmt.Errorf("sshtest: %w", err)
	}
	// The privilege separation directory sshd wants when it runs as root
	// (Debian's package makes it at boot, not at install).
	_ = os.MkdirAll("/run/sshd", 0o755)
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("sshtest: %w", err)
		}
		if lastErr = s.start(port); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("sshtest: %w", lastErr)
}

// SSHArgs are the ssh arguments that reach the server as s.Alias:
// {"-F", s.ClientConfig}.
func (s *Server) SSHArgs() []string { return []string{"-F", s.ClientConfig} }

// start writes the configs for port and starts sshd, waiting for it to
// listen.
func (s *Server) start(port int) error {
	hostPub, err := os.ReadFile(filepath.Join(s.Dir, hostKeyFile+".pub"))
	if err != nil {
		return err
	}
	files := map[string]string{
		serverConfFile: s.serverConfig(port, s.opts),
		clientConfFile: s.clientConfig(port, s.User),
		knownHostsFile: knownHosts(port, string(hostPub)),
	}
	for name, text := range files {
		if err := writeFile(filepath.Join(s.Dir, name), text); err != nil {
			return err
		}
	}
	log, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	start, _ := log.Seek(0, 2)
	cmd := exec.Command(SSHD, "-D", "-e", "-f", filepath.Join(s.Dir, serverConfFile))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", SSHD, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	ready := fmt.Sprintf("Server listening on 127.0.0.1 port %d.", port)
	deadline := time.Now().Add(readyTimeout)
	for {
		text := s.logSince(start)
		if strings.Contains(text, ready) {
			s.cmd, s.done, s.Port = cmd, done, port
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited before it listened on port %d: %s", SSHD, port, strings.TrimSpace(text))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			return fmt.Errorf("%s did not listen on port %d within %v: %s", SSHD, port, readyTimeout, strings.TrimSpace(text))
		}
	}
}

// logSince returns sshd's log from offset on.
func (s *Server) logSince(offset int64) string {
	b, err := os.ReadFile(s.Log)
	if err != nil || int64(len(b)) < offset {
		return ""
	}
	return string(b[offset:])
}

// Stop kills the server and every connection it has (the sessions'
// commands live on, as on a host whose sshd went away). Connecting fails
// until [Server.Restart].
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.DropConnections()
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Restart starts the server again on the same port after [Server.Stop].
func (s *Server) Restart() error {
	if s.cmd != nil {
		return fmt.Errorf("sshtest: Restart of a server that is running")
	}
	var err error
	for range 50 { // the port may linger a moment after the kill
		if err = s.start(s.Port); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("sshtest: restart: %w", err)
}

// DropConnections kills the server's side of every connection it holds
// (SIGKILL), as a network drop does: the clients see their connection
// end, the sessions' commands on the host live on without their stdin and
// stdout. The server keeps listening. (Linux: it finds them in /proc.)
func (s *Server) DropConnections() {
	if s.cmd == nil {
		return
	}
	for _, pid := range children(s.cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Close kills the server and its connections, then waits a grace for the
// sessions' processes to end: those still alive are killed, and the
// error names them ("nothing left running on the host").
func (s *Server) Close() error {
	s.Stop()
	deadline := time.Now().Add(leakGrace)
	for {
		procs := s.Processes()
		if len(procs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, p := range procs {
				_ = syscall.Kill(p.PID, syscall.SIGKILL)
			}
			return fmt.Errorf("sshtest: %d process(es) still running on the host %s after the test; killed them:\n%s",
				len(procs), leakGrace, strings.Join(procNames(procs), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Proc is a process running in a session of the server.
type Proc struct {
	PID     int
	Cmdline string
}

func procNames(ps []Proc) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%d: %s", p.PID, p.Cmdline)
	}
	return out
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
