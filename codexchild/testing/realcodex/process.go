package realcodex

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Process is a Codex process started by [Start] for a test.
type Process struct {
	// Cmd is the running command; do not call Wait on it, use [Process.Stop].
	Cmd *exec.Cmd
	// Stdin is the process's standard input.
	Stdin io.WriteCloser
	// Stdout reads the process's standard output. It reaches EOF once the
	// process and everything that inherited its stdout have exited.
	Stdout *bufio.Reader
	// StderrPath is the file that receives the process's standard error.
	StderrPath string
	// StopGrace is how long [Process.Stop] waits after closing stdin before
	// it sends SIGTERM; 0 means 5s. Set it before Stop runs.
	StopGrace time.Duration

	t        testing.TB
	stdout   *os.File
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// Start runs bin with args in h's work dir and h's environment, in its own
// process group, with stderr going to a file in h.LogDir(). It registers a
// cleanup that stops the process (see [Process.Stop]) and, when the test
// failed, logs the end of its stderr.
func Start(t testing.TB, h *Home, bin string, args ...string) *Process {
	t.Helper()
	if err := os.MkdirAll(h.LogDir(), 0o700); err != nil {
		t.Fatalf("realcodex: %v", err)
	}
	h.nproc++
	stderrPath := filepath.Join(h.LogDir(), fmt.Sprintf("%02d-%s.stderr", h.nproc, filepath.Base(bin)))
	stderr, err := os.OpenFile(stderrPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatalf("realcodex: %v", err)
	}
	defer stderr.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatalf("realcodex: %v", err)
	}
	defer outW.Close()

	cmd := exec.Command(bin, args...)
	cmd.Dir = h.WorkDir
	cmd.Env = h.Env()
	cmd.Stdout = outW
	cmd.Stderr = stderr
	setGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		outR.Close()
		t.Fatalf("realcodex: %v", err)
	}
	if err := cmd.Start(); err != nil {
		outR.Close()
		t.Fatalf("realcodex: start %s: %v", bin, err)
	}
	p := &Process{
		Cmd:        cmd,
		Stdin:      stdin,
		Stdout:     bufio.NewReaderSize(outR, 1<<16),
		StderrPath: stderrPath,
		t:          t,
		stdout:     outR,
		exited:     make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Logf("realcodex: %s: %v", filepath.Base(bin), err)
		}
		if t.Failed() {
			t.Logf("realcodex: end of %s stderr (%s):\n%s", filepath.Base(bin), stderrPath, tail(stderrPath, 4096))
		}
	})
	return p
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stop ends the process: it closes stdin and waits up to StopGrace (5s) for
// a clean exit, then sends SIGTERM to the process group and waits 3s more, then
// SIGKILL. It returns the error of Wait (nil for exit status 0) plus a note
// when signals were needed. Later calls return nil.
func (p *Process) Stop() error {
	var err error
	p.stopOnce.Do(func() {
		p.Stdin.Close()
		grace := p.StopGrace
		if grace <= 0 {
			grace = 5 * time.Second
		}
		var how string
		select {
		case <-p.exited:
		case <-time.After(grace):
			how = fmt.Sprintf("did not exit %s after stdin closed; sent SIGTERM to its group", grace)
			terminateGroup(p.Cmd)
			select {
			case <-p.exited:
			case <-time.After(3 * time.Second):
				how = "ignored SIGTERM for 3s; sent SIGKILL to its group"
				killGroup(p.Cmd)
				<-p.exited
			}
		}
		p.stdout.Close()
		switch {
		case how != "" && p.waitErr != nil:
			err = fmt.Errorf("%s: %w", how, p.waitErr)
		case how != "":
			err = fmt.Errorf("%s", how)
		default:
			err = p.waitErr
		}
	})
	return err
}

// tail returns the last n bytes of a file.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return err.Error()
		}
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
