//go:build unix

package testscripts

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyProgram is an interactive program (the Claude Code TUI) running in a
// pseudo-terminal of its own, as a user's terminal would run it: a test
// types into it and waits for what it draws. The program leads a session
// and a process group of its own, so the whole tree it starts can be
// signalled at once. github.com/creack/pty opens the terminal (a test-only
// dependency): it does openpty, the window size and the controlling
// terminal for Linux and macOS alike, which x/sys/unix leaves to the
// caller per platform.
type ptyProgram struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	done chan struct{} // closed when the program has exited (Wait returned)

	mu     sync.Mutex
	out    bytes.Buffer // everything the program wrote to the terminal
	exit   error
	exited bool
}

// startPTY starts cmd in a new pseudo-terminal of cols×rows. The program
// is killed (its whole process group) when the test ends.
func startPTY(t *testing.T, cmd *exec.Cmd, cols, rows uint16) *ptyProgram {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	tty, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: cols, Rows: rows}, cmd.SysProcAttr)
	if err != nil {
		t.Fatalf("start %s in a pty: %v", cmd.Path, err)
	}
	p := &ptyProgram{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	readDone := make(chan struct{})
	go func() { // the one reader of the terminal
		defer close(readDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := tty.Read(buf)
			if n > 0 {
				p.mu.Lock()
				p.out.Write(buf[:n])
				p.mu.Unlock()
			}
			if err != nil {
				return // EIO once the program and its children have closed the terminal
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exit, p.exited = err, true
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not end 10 s after SIGKILL", cmd.Path)
		}
		tty.Close()
		<-readDone
	})
	return p
}

// pgid is the program's process group (it leads its own session).
func (p *ptyProgram) pgid() int { return p.cmd.Process.Pid }

// kill sends SIGKILL to the program's whole process group.
func (p *ptyProgram) kill() { _ = syscall.Kill(-p.pgid(), syscall.SIGKILL) }

// typeText writes s to the terminal as keystrokes ("\r" is Enter).
func (p *ptyProgram) typeText(s string) {
	p.t.Helper()
	if _, err := p.tty.Write([]byte(s)); err != nil {
		p.t.Fatalf("type %q: %v", s, err)
	}
}

// typeLine types s slowly enough that the TUI takes it as typing, not as a
// paste, then Enter.
func (p *ptyProgram) typeLine(s string) {
	p.t.Helper()
	for _, r := range s {
		p.typeText(string(r))
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	p.typeText("\r")
}

// raw returns all the program has written so far.
func (p *ptyProgram) raw() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// screen returns what the program has written so far, without the
// terminal's control sequences: a cursor movement becomes a space, so
// that the words of a repainted line stay apart.
func (p *ptyProgram) screen() string { return stripANSI(p.raw()) }

var (
	// ansiRE matches CSI sequences (cursor, colours, modes), OSC sequences
	// (titles, links) and the two-byte escapes.
	ansiRE   = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b[()*+][0-9A-Za-z]|\x1b[@-Z\\-_=>78]`)
	spacesRE = regexp.MustCompile(`[ \t]+`)
)

func stripANSI(s string) string {
	s = ansiRE.ReplaceAllString(s, " ")
	s = strings.Map(func(r rune) rune {
		if r == '\r' {
			return '\n'
		}
		if r < ' ' && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, s)
	return spacesRE.ReplaceAllString(s, " ")
}

// waitScreen waits until the screen, from byte offset from of the raw
// output on, matches re, or the deadline passes or the program exits.
func (p *ptyProgram) waitScreen(re *regexp.Regexp, from int, d time.Duration) error {
	return p.waitFor(re.String(), d, func() bool {
		raw := p.raw()
		return re.MatchString(stripANSI(raw[min(from, len(raw)):]))
	})
}

// waitFor polls cond every 50 ms until it holds; it fails when d passes
// or the program exits first.
func (p *ptyProgram) waitFor(what string, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return nil
		}
		select {
		case <-p.done:
			if cond() {
				return nil
			}
			return fmt.Errorf("waiting for %s: the program exited (%v)", what, p.exitErr())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exitErr is Wait's error once the program has exited.
func (p *ptyProgram) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		return errors.New("still running")
	}
	return p.exit
}

// waitExit waits up to d for the program to exit by itself.
func (p *ptyProgram) waitExit(d time.Duration) error {
	select {
	case <-p.done:
		return p.exitErr()
	case <-time.After(d):
		return fmt.Errorf("%s still runs after %s", p.cmd.Path, d)
	}
}

// stop ends the program as a closed terminal window would: SIGHUP to its
// process group, then SIGKILL after grace.
func (p *ptyProgram) stop(grace time.Duration) {
	_ = syscall.Kill(-p.pgid(), syscall.SIGHUP)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
		<-p.done
	}
}
