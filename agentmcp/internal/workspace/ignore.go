package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// ignoreCheck is one long-lived `git check-ignore --stdin -z -v -n` in a
// worktree: whether git ignores a path there, asked without starting a
// process each time (a Tracker asks about every new file and directory).
// It answers as `git add -A` decides: by the worktree's .gitignore files,
// info/exclude and core.excludesFile, with the worktree's index (a tracked
// path is never ignored). It reads each .gitignore once: after one
// changes, start another.
//
// Not safe for concurrent use: its Tracker calls it under its mutex.
type ignoreCheck struct {
	in     *io.PipeWriter
	out    *bufio.Reader
	outR   *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done is closed
}

// startIgnoreCheck starts check-ignore in dir through the Manager's
// runner.
func (m *Manager) startIgnoreCheck(dir string) *ignoreCheck {
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &ignoreCheck{in: inW, out: bufio.NewReader(outR), outR: outR, cancel: cancel, done: make(chan struct{})}
	go func() {
		var stderr strings.Builder
		err := m.git.r.Run(ctx, &Command{Dir: dir, Name: "git", Args: []string{"check-ignore", "--stdin", "-z", "-v", "-n"},
			Env: append(append([]string{}, gitEnv...), "GIT_OPTIONAL_LOCKS=0"), Stdin: inR, Stdout: outW, Stderr: &stderr})
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		c.err = fmt.Errorf("workspace: git check-ignore in %s ended: %w %s", dir, err, strings.TrimSpace(stderr.String()))
		inR.CloseWithError(c.err)
		outW.CloseWithError(c.err)
		close(c.done)
	}()
	return c
}

// ignored reports, for each path (relative to the worktree's root,
// slash-separated, no NUL), whether git ignores it. ctx bounds the wait.
func (c *ignoreCheck) ignored(ctx context.Context, paths []string) ([]bool, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	stop := context.AfterFunc(ctx, func() { c.outR.CloseWithError(ctx.Err()) })
	defer stop()
	// Written while the answers are read: a long list would otherwise
	// fill both pipes.
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		var b strings.Builder
		for _, p := range paths {
			b.WriteString(p)
			b.WriteByte(0)
		}
		_, werr = io.WriteString(c.in, b.String())
	}()
	out := make([]bool, len(paths))
	var err error
	for i := range paths {
		var f [4]string
		for j := range f {
			if f[j], err = c.out.ReadString(0); err != nil {
				break
			}
			f[j] = strings.TrimSuffix(f[j], "\x00")
		}
		if err != nil {
			break
		}
		// <source> <line> <pattern> <path>; no source: no pattern
		// matched; a negated pattern ("!x") matched: not ignored.
		if f[3] != paths[i] {
			err = fmt.Errorf("workspace: check-ignore answered %q for %q", f[3], paths[i])
			break
		}
		out[i] = f[0] != "" && !strings.HasPrefix(f[2], "!")
	}
	if err != nil {
		c.close() // out of step: unusable
		wg.Wait()
		return nil, errors.Join(err, werr)
	}
	wg.Wait()
	if werr != nil {
		c.close()
		return nil, werr
	}
	return out, nil
}

// close stops check-ignore and waits for it.
func (c *ignoreCheck) close() {
	c.in.Close()
	c.outR.Close()
	c.cancel()
	<-c.done
}
