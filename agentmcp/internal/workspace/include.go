package workspace

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// IncludeFile is Claude Code's file of patterns (gitignore syntax) naming
// the untracked files that a new worktree gets a copy of, such as .env. It
// is read at the root of the checkout the worktree is made from.
const IncludeFile = ".worktreeinclude"

// includedFiles lists the files of checkout top that IncludeFile names and
// git ignores there. That is Claude Code 2.1.332's rule (read from its
// code: it lists the ignored untracked entries with `ls-files --others
// --ignored --exclude-standard --directory`, looks into the collapsed
// directories a pattern can reach, and keeps what the patterns match, with
// an npm gitignore matcher; symbolic links are skipped). Here git itself
// matches, in the other order: the patterns first (`ls-files --others
// --ignored --exclude-from`, walking only untracked files: 30 ms with a
// 30,000-file node_modules), then the ignore rules (`check-ignore
// --stdin`). A tracked file, or an untracked one the user has not ignored,
// is never copied.
func (m *Manager) includedFiles(ctx context.Context, top string) ([]string, error) {
	file := filepath.Join(top, IncludeFile)
	if regular, err := m.fs.isRegular(ctx, file); err != nil || !regular {
		return nil, nil
	}
	out, err := m.git.run(ctx, top, gitOpts{readOnly: true}, "ls-files", "-z", "--others", "--ignored", "--exclude-from="+file)
	if err != nil {
		return nil, fmt.Errorf("workspace: match %s: %w", IncludeFile, err)
	}
	cands := splitNUL(out)
	if len(cands) == 0 {
		return nil, nil
	}
	in := strings.Join(cands, "\x00") + "\x00"
	out, err = m.git.run(ctx, top, gitOpts{readOnly: true, stdin: strings.NewReader(in)}, "check-ignore", "-z", "--stdin")
	if c, ok := exitCode(err); err != nil && !(ok && c == 1) { // 1: none is ignored
		return nil, fmt.Errorf("workspace: check-ignore for %s: %w", IncludeFile, err)
	}
	return splitNUL(out), nil
}

// copyIncluded copies the files includedFiles names from top to the same
// paths below wt: regular files only (a symbolic link is skipped: it could
// point anywhere), never over a file that is already there, never through
// a directory that is a symbolic link.
func (m *Manager) copyIncluded(ctx context.Context, top, wt string) ([]string, error) {
	files, err := m.includedFiles(ctx, top)
	if err != nil {
		return nil, err
	}
	return m.fs.copyIncluded(ctx, top, wt, files, func(rel string) {
		m.log.Info("not copied from "+IncludeFile+": not a regular file", "path", rel)
	})
}

// SetupError is a setup command that failed: what it was, how it ended,
// and the end of its output. It matches ErrSetup.
type SetupError struct {
	Command string
	Result  CommandResult
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("workspace: setup %q failed (%s): %s", e.Command, e.Result.Status(), e.Result.Tail)
}

func (e *SetupError) Is(target error) bool { return target == ErrSetup }

// runSetup runs the setup command in the new worktree, at its root, with
// the place's environment (Place.Env) and ATM_SOURCE (the checkout it was
// made from), and returns the end of its output.
func (m *Manager) runSetup(ctx context.Context, command string, p *Place) (string, error) {
	env := append(p.Env(), "ATM_SOURCE="+p.Source)
	res, err := m.runCommand(ctx, p.Path, command, env, nil)
	if err != nil {
		return res.Tail, &SetupError{Command: command, Result: res}
	}
	return res.Tail, nil
}

// tailBuffer keeps the last max bytes written to it and the last complete
// line. Safe for one writer and concurrent readers.
type tailBuffer struct {
	max  int
	mu   sync.Mutex // guards the fields below
	buf  []byte
	line []byte // the line being written
	last string // the last complete, non-empty line
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	for _, b := range p {
		if b == '\n' {
			if s := strings.TrimSpace(string(t.line)); s != "" {
				t.last = s
			}
			t.line = t.line[:0]
			continue
		}
		if len(t.line) < 1024 {
			t.line = append(t.line, b)
		}
	}
	return len(p), nil
}

// lastLine returns the last complete, non-empty line written.
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return string(b)
}
