package testscripts

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/sshtest"
)

// sshServers are the loopback sshds of each running scenario.
var (
	sshServersMu sync.Mutex
	sshServers   = map[*testscript.TestScript]*sshtest.Server{}
)

// cmdSSHD plays a host reached over ssh in a scenario, with a private
// OpenSSH server on loopback (codexchild/sshtest):
//
//	sshd start [-path DIR]... DIR   start it: its keys, configs and log in DIR, the host's home in
//	                                DIR/home ($REMOTE_HOME), the -path directories first on the host's
//	                                PATH; ssh -F DIR/ssh_config box reaches it ($SSH_CONFIG)
//	sshd drop                       drop its connections, as a network drop does
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
		ts.Fatalf("usage: sshd start [-path DIR]... DIR | sshd drop | sshd stop")
	}
	sshServersMu.Lock()
	srv := sshServers[ts]
	sshServersMu.Unlock()
	switch args[0] {
	case "start":
		if srv != nil {
			ts.Fatalf("sshd: already started")
		}
		var path []string
		rest := args[1:]
		for len(rest) >= 2 && rest[0] == "-path" {
			path, rest = append(path, ts.MkAbs(rest[1])), rest[2:]
		}
		if len(rest) != 1 {
			ts.Fatalf("usage: sshd start [-path DIR]... DIR")
		}
		dir := ts.MkAbs(rest[0])
		ts.Check(os.MkdirAll(dir, 0o700))
		srv, err := sshtest.New(dir, &sshtest.Options{Path: path})
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
