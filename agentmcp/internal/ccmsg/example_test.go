package ccmsg_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/ccmsg"
)

func Example() {
	dir, _ := os.MkdirTemp("", "ccmsg")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cc.sock")
	ln, _ := net.Listen("unix", path) // Claude Code's side
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, _ := ln.Accept()
		defer conn.Close()
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			fmt.Println(sc.Text())
		}
	}()

	c, _ := ccmsg.New(ccmsg.Config{Socket: path, Token: "secret"})
	err := c.Send(context.Background(), ccmsg.Message{Content: "Team mail from codex1: tests pass", From: "codex1"})
	<-done
	fmt.Println(err)
	// Output:
	// {"type":"auth","token":"secret"}
	// {"type":"user","message":{"role":"user","content":"Team mail from codex1: tests pass"},"from":"codex1"}
	// <nil>
}
