package testscripts

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/testing/sshtest"
)

// sshServers are the loopback sshds of each running scenario.
var (
	sshServersMu sync.Mutex
	sshServers   = map[*testscript.TestScript]*sshtest.Server{}
)

// cmdSSHD plays a host reached over ssh in a scenario, with a private
// OpenSSH server on loopback (codexchild/testing/sshtest):
//
//	sshd start [-path DIR]... [-env K=V]... DIR
//	                                start it: its keys, configs and log in DIR, the host's home in
//	                                DIR/home ($REMOTE_HOME), the -path directories first on the host's
//	                                PATH, the -env variables in every session there; ssh -F
//	                                DIR/ssh_config box reaches it ($SSH_CONFIG)
//	sshd drop                       drop its connections, as a network drop does
//	sshd pause                      take the host away (the server and its connections killed;
//	                                connecting fails) until resume
//	sshd resume                     bring it back on the same port
//	sshd kill-master PID            kill (SIGKILL) the ssh master connection that the process PID
//	                                (serve) started, as a crash of ssh, or an OOM kill, does
//	sshd cancel-forward PID LOG     cancel, on the master connection of the process PID (serve), the
//	                                last reverse forward its log LOG says it made (ssh -O cancel -R):
//	                                its port on the host closes, the connection stays
//	sshd ps                         print the processes that run on the host, one a line
//	sshd wait-gone REGEXP           wait (at most waitLimit) until no process on the host matches
//	sshd stop                       stop it, failing if anything still runs on the host
//
// Scenarios check [sshd] first: it is false under -short and where sshd
// is not installed (true or an error under ATM_REQUIRE_REAL_CODEX=1). The
// scenario's end stops a server left running.
func cmdSSHD(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! sshd")
	}
	if len(args) == 0 {
		ts.Fatalf("usage: sshd start [-path DIR]... [-env K=V]... DIR | sshd drop | sshd pause | sshd resume | sshd kill-master PID | sshd stop")
	}
	sshServersMu.Lock()
	srv := sshServers[ts]
	sshServersMu.Unlock()
	switch args[0] {
	case "start":
		if srv != nil {
			ts.Fatalf("sshd: already started")
		}
		var path, env []string
		rest := args[1:]
		for len(rest) >= 2 && (rest[0] == "-path" || rest[0] == "-env") {
			if rest[0] == "-path" {
				path = append(path, ts.MkAbs(rest[1]))
			} else {
				env = append(env, rest[1])
			}
			rest = rest[2:]
		}
		if len(rest) != 1 {
			ts.Fatalf("usage: sshd start [-path DIR]... [-env K=V]... DIR")
		}
		dir := ts.MkAbs(rest[0])
		ts.Check(os.MkdirAll(dir, 0o700))
		srv, err := sshtest.New(dir, &sshtest.Options{Path: path, Env: env})
		ts.Check(err)
		sshServersMu.Lock()
		sshServers[ts] = srv
		sshServersMu.Unlock()
		ts.Defer(func() {
			sshServersMu.Lock()
			s := sshServers[ts]
			delete(sshServers, ts)
			sshServersMu.Unlock()
			if s != nil {
				if err := s.Close(); err != nil {
					ts.Logf("sshd: %v", err)
				}
			}
		})
		ts.Setenv("REMOTE_HOME", srv.Home)
		ts.Setenv("SSH_CONFIG", srv.ClientConfig)
		ts.Logf("sshd on 127.0.0.1:%d, log %s", srv.Port, srv.Log)
	case "drop":
		if srv == nil {
			ts.Fatalf("sshd: not started")
		}
		srv.DropConnections()
	case "pause":
		if srv == nil {
			ts.Fatalf("sshd: not started")
		}
		srv.Stop()
	case "resume":
		if srv == nil {
			ts.Fatalf("sshd: not started")
		}
		ts.Check(srv.Restart())
	case "kill-master":
		if len(args) != 2 {
			ts.Fatalf("usage: sshd kill-master PID")
		}
		pid, err := strconv.Atoi(args[1])
		ts.Check(err)
		killed := killMaster(pid)
		if len(killed) == 0 {
			ts.Fatalf("sshd: no ssh master connection under process %d", pid)
		}
		ts.Logf("killed the ssh master connection(s) %v", killed)
	case "cancel-forward":
		if len(args) != 3 {
			ts.Fatalf("usage: sshd cancel-forward PID LOG")
		}
		pid, err := strconv.Atoi(args[1])
		ts.Check(err)
		socks := masterSockets(pid)
		if len(socks) != 1 {
			ts.Fatalf("sshd: %d ssh master connections under process %d, want one", len(socks), pid)
		}
		local, port := lastForward(ts, ts.ReadFile(args[2]))
		// A forward is known to the master by the spec it was asked with:
		// port 0 (ssh's choice) when first made, its port once made again.
		var said []string
		for _, spec := range []string{"127.0.0.1:0:" + local, "127.0.0.1:" + port + ":" + local} {
			out, err := exec.Command("ssh", "-F", "/dev/null", "-S", socks[0], "-O", "cancel", "-R", spec, "box").CombinedOutput()
			if err == nil && !strings.Contains(string(out), "failed") {
				ts.Logf("cancelled the reverse forward %s", spec)
				return
			}
			said = append(said, fmt.Sprintf("%s: %v %s", spec, err, strings.TrimSpace(string(out))))
		}
		ts.Fatalf("sshd: could not cancel the forward: %s", strings.Join(said, "; "))
	case "ps":
		if srv == nil {
			ts.Fatalf("sshd: not started")
		}
		for _, p := range srv.Processes() {
			fmt.Fprintf(ts.Stdout(), "%d %s\n", p.PID, p.Cmdline)
		}
	case "wait-gone":
		if srv == nil || len(args) != 2 {
			ts.Fatalf("usage: sshd wait-gone REGEXP (after start)")
		}
		re, err := regexp.Compile(args[1])
		ts.Check(err)
		deadline := time.Now().Add(waitLimit(ts))
		for {
			var left []string
			for _, p := range srv.Processes() {
				if re.MatchString(p.Cmdline) {
					left = append(left, p.Cmdline)
				}
			}
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				ts.Fatalf("sshd wait-gone: still on the host after %s: %q", waitLimit(ts), left)
			}
			time.Sleep(20 * time.Millisecond)
		}
	case "stop":
		if srv == nil {
			ts.Fatalf("sshd: not started")
		}
		sshServersMu.Lock()
		delete(sshServers, ts)
		sshServersMu.Unlock()
		if err := srv.Close(); err != nil {
			ts.Fatalf("%v", err)
		}
	default:
		ts.Fatalf("sshd: unknown subcommand %q", args[0])
	}
}

// forwardRE is serve's log line of a reverse forward made (or made again).
var forwardRE = regexp.MustCompile(`msg="reverse forward made(?: again)?".* local=(\S+) remote_port=(\d+)`)

// lastForward is the local address and the host's port of the last
// reverse forward a serve's log says it made.
func lastForward(ts *testscript.TestScript, log string) (local, port string) {
	m := forwardRE.FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		ts.Fatalf("sshd: the log says of no reverse forward made")
	}
	last := m[len(m)-1]
	return last[1], last[2]
}

// sshdCondition gives scenarios the condition [sshd]: a loopback sshd can
// run here. Other conditions go to next (nil: none).
func sshdCondition(next func(string) (bool, error)) func(string) (bool, error) {
	return func(cond string) (bool, error) {
		if cond != "sshd" {
			if next == nil {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			return next(cond)
		}
		if testing.Short() {
			return false, nil
		}
		missing := sshtest.Missing()
		if missing != "" && os.Getenv(sshtest.RequireEnv) == "1" {
			return false, fmt.Errorf("sshd required (%s=1) but unavailable: %s; run `make sshd` as root", sshtest.RequireEnv, strings.TrimSpace(missing))
		}
		return missing == "", nil
	}
}
