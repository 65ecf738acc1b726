// Command mockmodel serves the loopback mock of the OpenAI Responses API from
// package modelmock, for end-to-end tests written in other languages and for
// humans poking at the real Codex CLI.
//
// Usage:
//
//	mockmodel [-addr 127.0.0.1:0] [-log requests.jsonl] [-v] [-watch-stdin=true]
//
// The first line on stdout is the base URL ("http://127.0.0.1:PORT/v1"), to
// use as a Codex provider's base_url; nothing else is written to stdout. The
// mock then serves until SIGTERM or SIGINT, or until stdin reaches EOF (so a
// parent that dies takes it down). Run it in the background of a shell with
// -watch-stdin=false, since such a job's stdin is /dev/null. Diagnostics go
// to stderr; -v adds a line per request.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/modelmock"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mockmodel:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mockmodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "TCP address to listen on")
	logPath := fs.String("log", "", "append every request to this file as one JSON line")
	verbose := fs.Bool("v", false, "log every request to stderr")
	watchStdin := fs.Bool("watch-stdin", true, "exit when stdin reaches EOF")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := modelmock.Config{Addr: *addr, Logger: logger}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.Log = f
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *watchStdin {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			logger.Info("stdin closed; stopping")
			cancel()
		}()
	}

	srv, err := modelmock.Start(cfg)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, srv.URL()); err != nil {
		srv.Close()
		return err
	}
	logger.Info("serving", "url", srv.URL())
	<-ctx.Done()
	return srv.Close()
}
