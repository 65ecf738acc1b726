package mockmodel

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeUntilStdinCloses(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "requests.jsonl")
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"-log", logPath}, stdinR, stdoutW, io.Discard)
		stdoutW.Close()
	}()

	url, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("read base URL: %v", err)
	}
	url = strings.TrimSpace(url)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("first stdout line %q is not a loopback base URL", url)
	}
	go io.Copy(io.Discard, stdoutR) // nothing else is expected, but never block

	resp, err := http.Post(url+"/responses", "application/json",
		strings.NewReader(`{"input":[{"type":"message","role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "MOCK_REPLY: hi") {
		t.Errorf("answer does not carry the reply:\n%s", b)
	}

	// The same mock speaks Anthropic's Messages API, at the URL without
	// its /v1 (ANTHROPIC_BASE_URL).
	resp, err = http.Post(strings.TrimSuffix(url, "/v1")+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"claude-mock","max_tokens":10,"messages":[{"role":"user","content":"hi claude"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"text":"MOCK_REPLY: hi claude"`) {
		t.Errorf("the Messages answer does not carry the reply:\n%s", b)
	}

	stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("mockmodel did not stop after stdin closed")
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "\n"); n != 2 || !strings.Contains(string(log), `"path":"/v1/responses"`) || !strings.Contains(string(log), `"path":"/v1/messages"`) {
		t.Errorf("request log has %d lines:\n%s", n, log)
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"extra"}, {"-addr", "256.0.0.1:0", "-watch-stdin=false"}} {
		if err := run(args, strings.NewReader(""), io.Discard, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
