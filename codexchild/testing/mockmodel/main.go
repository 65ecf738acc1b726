package mockmodel

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Main runs mockmodel as a program: the command line of os.Args, stdin,
// stdout and stderr. It returns the exit code, for the caller to pass to
// os.Exit: 0 once the mock has stopped, 1 after an error (told on stderr).
func Main() int {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mockmodel:", err)
		return 1
	}
	return 0
}

// run is Main over the given arguments and streams, returning its error;
// tests call it over pipes.
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
	cfg := Config{Addr: *addr, Logger: logger}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("open the request log: %w", err)
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

	srv, err := Start(cfg)
	if err != nil {
		return fmt.Errorf("start the mock: %w", err)
	}
	if _, err := fmt.Fprintln(stdout, srv.URL()); err != nil {
		srv.Close()
		return err
	}
	logger.Info("serving", "url", srv.URL())
	<-ctx.Done()
	return srv.Close()
}
