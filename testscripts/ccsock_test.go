package testscripts

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// ccSocket is a stand-in for Claude Code's messaging socket
// (CLAUDE_CODE_MESSAGING_SOCKET): a Unix listener that appends every line
// of every connection to a file.
type ccSocket struct {
	ln   net.Listener
	mu   sync.Mutex // serialises writes to out
	out  *os.File
	wg   sync.WaitGroup
	dir  string
	path string
}

// ccSockets are the sockets of each running scenario, by variable name.
var (
	ccSocketsMu sync.Mutex
	ccSockets   = map[*testscript.TestScript]map[string]*ccSocket{}
)

// cmdCCSock plays Claude Code's messaging socket in a scenario:
//
//	ccsock listen VAR FILE   listen on a new socket (path in $VAR); append every line read to FILE
//	ccsock close VAR         stop listening (connections are refused; the path stays)
//
// The socket lives in a short temporary directory (a Unix socket's path is
// limited to about 100 bytes); the scenario's end closes it.
func cmdCCSock(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! ccsock")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: ccsock listen VAR FILE | ccsock close VAR")
	}
	ccSocketsMu.Lock()
	socks := ccSockets[ts]
	if socks == nil {
		socks = map[string]*ccSocket{}
		ccSockets[ts] = socks
		ts.Defer(func() {
			ccSocketsMu.Lock()
			delete(ccSockets, ts)
			ccSocketsMu.Unlock()
		})
	}
	ccSocketsMu.Unlock()
	switch args[0] {
	case "listen":
		if len(args) != 3 {
			ts.Fatalf("usage: ccsock listen VAR FILE")
		}
		if socks[args[1]] != nil {
			ts.Fatalf("ccsock: %s is listening already", args[1])
		}
		dir, err := os.MkdirTemp("", "cc")
		ts.Check(err)
		s := &ccSocket{dir: dir, path: filepath.Join(dir, "cc.sock")}
		s.out, err = os.OpenFile(ts.MkAbs(args[2]), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		ts.Check(err)
		ln, err := net.Listen("unix", s.path)
		ts.Check(err)
		ln.(*net.UnixListener).SetUnlinkOnClose(false) // after close the path refuses connections
		s.ln = ln
		s.wg.Add(1)
		go s.accept()
		socks[args[1]] = s
		ts.Setenv(args[1], s.path)
		ts.Defer(func() {
			s.close()
			s.out.Close()
			os.RemoveAll(s.dir)
		})
	case "close":
		s := socks[args[1]]
		if s == nil {
			ts.Fatalf("ccsock: %s is not listening", args[1])
		}
		s.close()
	default:
		ts.Fatalf("ccsock: unknown subcommand %q", args[0])
	}
}

func (s *ccSocket) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				s.mu.Lock()
				s.out.Write(append(sc.Bytes(), '\n'))
				s.mu.Unlock()
			}
		}()
	}
}

// close stops listening and waits for the connections to end; a second
// close does nothing.
func (s *ccSocket) close() {
	s.ln.Close()
	s.wg.Wait()
}

// withoutClaudeSession drops what a Claude Code session gives the programs
// it starts (CLAUDE_CODE_SESSION_ID, its messaging socket, CLAUDECODE) from
// env: when the tests run under Claude Code, a serve they start must not
// join that session's team or push mail into it. Scenarios that play
// Claude Code set these variables themselves (MCP_ENV).
func withoutClaudeSession(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "CLAUDE_CODE_") || strings.HasPrefix(kv, "CLAUDECODE=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
