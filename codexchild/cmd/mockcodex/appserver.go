package main

import "github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"

// appServer will speak codex app-server 0.169.0 (phase 2).
type appServer struct{ p *process }

func newAppServer(p *process) *appServer { return &appServer{p: p} }

func (s *appServer) serve(jsonrpcframe.Reader) {
	s.p.logf("ERROR", "mockcodex", "app-server: not in this build yet")
}
