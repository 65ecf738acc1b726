package workspace

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// shFiles are the files of the host a Runner reaches: each operation is
// one fixed POSIX sh program (below), run there through the Runner as
// `sh -c <program> <name> <arguments…>`, its arguments passed as a list
// and its answers read from its exit status and its output (NUL-separated
// where a name may hold anything). The programs use only what every POSIX
// system has (test, mkdir, cat, cp, ln, mv, rm, pwd) and mktemp; a lock
// is flock(1) where the host has it (the flock(2) lock this machine's
// gofrs/flock takes), else a lock directory made with mkdir.
type shFiles struct{ r Runner }

// Exit statuses of the programs beyond 0 and 1 (a failure, with its
// words on stderr).
const (
	shNotFound = 3 // no such file or directory
	shSymlink  = 4 // a symbolic link where a directory must be
	shNotDir   = 5 // something else where a directory must be
)

// run runs program with args through the Runner and returns its stdout; a
// failure carries its stderr.
func (s shFiles) run(ctx context.Context, op, program string, stdin io.Reader, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	err := s.r.Run(ctx, &Command{Dir: "/", Name: "sh", Args: append([]string{"-c", program, "atm-agent-mcp-" + op}, args...),
		Stdin: stdin, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.Bytes(), &shError{op: op, args: args, stderr: stderr.String(), err: err}
	}
	return stdout.Bytes(), nil
}

// shError is a program that failed: what it did, on what, and what it
// said.
type shError struct {
	op     string
	args   []string
	stderr string
	err    error
}

func (e *shError) Error() string {
	msg := fmt.Sprintf("%s %s: %v", e.op, strings.Join(e.args, " "), e.err)
	if s := strings.TrimSpace(e.stderr); s != "" {
		msg += ": " + clipTail(s, 500)
	}
	return msg
}

func (e *shError) Unwrap() error { return e.err }

// status is the exit status of a program that ran and failed (-1 when
// it could not run).
func status(err error) int {
	if c, ok := exitCode(err); ok {
		return c
	}
	return -1
}

const shRealDir = `cd -P "$1" 2>/dev/null || exit 3
pwd -P`

func (s shFiles) realDir(ctx context.Context, dir string) (string, error) {
	out, err := s.run(ctx, "realdir", shRealDir, nil, dir)
	if status(err) == shNotFound {
		return "", fmt.Errorf("%s: %w", dir, fs.ErrNotExist)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

func (s shFiles) isDir(ctx context.Context, p string) bool {
	_, err := s.run(ctx, "isdir", `[ -d "$1" ]`, nil, p)
	return err == nil
}

func (s shFiles) isRegular(ctx context.Context, p string) (bool, error) {
	_, err := s.run(ctx, "isregular", `[ -f "$1" ] && [ ! -L "$1" ] || exit 3`, nil, p)
	if status(err) == shNotFound {
		return false, nil
	}
	return err == nil, err
}

const shExists = `[ -e "$1" ] || [ -L "$1" ] || exit 3`

func (s shFiles) exists(ctx context.Context, p string) (bool, error) {
	_, err := s.run(ctx, "exists", shExists, nil, p)
	if status(err) == shNotFound {
		return false, nil
	}
	return err == nil, err
}

func (s shFiles) mkdirAll(ctx context.Context, dir string) error {
	_, err := s.run(ctx, "mkdir", `mkdir -p "$1"`, nil, dir)
	return err
}

// shSafeDirs: $1 the top, then the directories to make below it, one
// component each; the path at fault is printed.
const shSafeDirs = `p=$1; shift
for part do
  p=$p/$part
  if [ ! -e "$p" ] && [ ! -L "$p" ]; then mkdir "$p" || [ -d "$p" ] || exit 1; fi
  if [ -L "$p" ]; then printf '%s' "$p"; exit 4; fi
  [ -d "$p" ] || { printf '%s' "$p"; exit 5; }
done`

func (s shFiles) safeDirs(ctx context.Context, top, rel string) error {
	out, err := s.run(ctx, "safedirs", shSafeDirs, nil, append([]string{top}, strings.Split(rel, "/")...)...)
	if err == nil {
		return nil
	}
	switch status(err) {
	case shSymlink:
		return fmt.Errorf("workspace: %s: %w", out, ErrSymlink)
	case shNotDir:
		return fmt.Errorf("workspace: %s is not a directory", out)
	}
	return fmt.Errorf("workspace: %w", err)
}

func (s shFiles) readFile(ctx context.Context, p string) ([]byte, error) {
	out, err := s.run(ctx, "read", `[ -e "$1" ] || exit 3
exec cat "$1"`, nil, p)
	if status(err) == shNotFound {
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	return out, err
}

// shWriteAtomic: $1 the file, $2 its mode (octal); the content on stdin.
const shWriteAtomic = `d=${1%/*}
t=$(mktemp "${d:-/}/.${1##*/}.tmpXXXXXX") || exit 1
trap 'rm -f "$t"' EXIT
cat >"$t" && chmod "$2" "$t" && mv -f "$t" "$1"`

func (s shFiles) writeFileAtomic(ctx context.Context, p string, data []byte, mode fs.FileMode) error {
	if _, err := s.run(ctx, "write", shWriteAtomic, bytes.NewReader(data), p, strconv.FormatUint(uint64(mode.Perm()), 8)); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// shCopyIncluded: $1 the source checkout, $2 the worktree, then the
// files. For each file it prints c<file> (copied) or s<file> (skipped:
// not a regular file), NUL-terminated; a directory on the way that is a
// link (L) or not a directory (N), or a copy that failed (E), ends it.
const shCopyIncluded = `top=$1 wt=$2; shift 2
for rel do
  src=$top/$rel dst=$wt/$rel
  if [ -L "$src" ] || [ ! -f "$src" ]; then printf 's%s\0' "$rel"; continue; fi
  case $rel in
  */*)
    p=$wt old=$IFS; IFS=/; set -f
    for part in ${rel%/*}; do
      p=$p/$part
      if [ ! -e "$p" ] && [ ! -L "$p" ]; then mkdir "$p" || [ -d "$p" ] || exit 1; fi
      if [ -L "$p" ]; then printf 'L%s\0' "$p"; exit 4; fi
      [ -d "$p" ] || { printf 'N%s\0' "$p"; exit 5; }
    done
    IFS=$old; set +f;;
  esac
  if [ -e "$dst" ] || [ -L "$dst" ]; then continue; fi
  if ! (set -C; : >"$dst") 2>/dev/null; then
    if [ -e "$dst" ] || [ -L "$dst" ]; then continue; fi
    printf 'E%s\0' "$rel"; exit 1
  fi
  cp -p "$src" "$dst" || { rm -f "$dst"; printf 'E%s\0' "$rel"; exit 1; }
  printf 'c%s\0' "$rel"
done`

func (s shFiles) copyIncluded(ctx context.Context, top, wt string, rels []string, skipped func(string)) ([]string, error) {
	if len(rels) == 0 {
		return nil, nil
	}
	out, err := s.run(ctx, "copy", shCopyIncluded, nil, append([]string{top, wt}, rels...)...)
	var copied []string
	var last string
	for _, f := range splitNUL(out) {
		if f == "" {
			continue
		}
		switch what := f[1:]; f[0] {
		case 'c':
			copied = append(copied, what)
		case 's':
			skipped(what)
		default:
			last = f
		}
	}
	switch {
	case err == nil:
		return copied, nil
	case status(err) == shSymlink:
		return copied, fmt.Errorf("workspace: %s: %w", last[1:], ErrSymlink)
	case status(err) == shNotDir:
		return copied, fmt.Errorf("workspace: %s is not a directory", last[1:])
	case strings.HasPrefix(last, "E"):
		return copied, fmt.Errorf("workspace: copy %s: %w", last[1:], err)
	}
	return copied, fmt.Errorf("workspace: %w", err)
}

// shTempCopy: $1 the directory, $2 the file to copy. The new file's path
// is printed first, so that a failure after it still names it.
const shTempCopy = `t=$(mktemp "$1/atm-snapshot-XXXXXXXX") || exit 1
printf '%s' "$t"
if [ -e "$2" ]; then cat "$2" >"$t" || exit 1; fi`

func (s shFiles) tempCopy(ctx context.Context, dir, src string) (string, error) {
	out, err := s.run(ctx, "tempcopy", shTempCopy, nil, dir, src)
	return string(out), err
}

func (s shFiles) remove(ctx context.Context, p string) error {
	_, err := s.run(ctx, "remove", `rm -f "$1"`, nil, p)
	return err
}

const shInstallIndex = `ln "$1" "$2.lock" || exit 1
mv -f "$2.lock" "$2" || { rm -f "$2.lock"; exit 1; }`

func (s shFiles) installIndex(ctx context.Context, index, realIndex string) error {
	_, err := s.run(ctx, "install-index", shInstallIndex, nil, index, realIndex)
	return err
}

// shLock takes the lock of $1 and holds it until its stdin ends, having
// said "locked".
const shLock = `if command -v flock >/dev/null 2>&1; then
  exec flock -x "$1" sh -c 'echo locked; exec cat >/dev/null'
fi
d=$1.d
until mkdir "$d" 2>/dev/null; do sleep 1; done
trap 'rmdir "$d"' EXIT
trap 'exit 1' HUP INT TERM PIPE
echo locked
cat >/dev/null`

// lockGrace bounds how long an unlock waits for the lock's program to end
// before it stops it.
const lockGrace = 10 * time.Second

func (s shFiles) lock(ctx context.Context, p string) (func(), error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		err := s.r.Run(runCtx, &Command{Dir: "/", Name: "sh", Args: []string{"-c", shLock, "atm-agent-mcp-lock", p},
			Stdin: inR, Stdout: outW, Stderr: &stderr})
		outW.CloseWithError(fmt.Errorf("the lock's program ended: %v", err))
		done <- err
	}()
	locked := make(chan error, 1)
	go func() {
		l, err := bufio.NewReader(outR).ReadString('\n')
		if err == nil && l != "locked\n" {
			err = fmt.Errorf("the lock's program said %q", l)
		}
		locked <- err
		_, _ = io.Copy(io.Discard, outR)
	}()
	release := func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(lockGrace):
			stop()
			<-done
		}
		stop()
	}
	select {
	case err := <-locked:
		if err != nil {
			release()
			return nil, fmt.Errorf("lock %s: %w: %s", p, err, strings.TrimSpace(stderr.String()))
		}
		return release, nil
	case <-ctx.Done():
		stop()
		inW.Close()
		<-done
		return nil, fmt.Errorf("lock %s: %w", p, ctx.Err())
	}
}

var _ files = shFiles{}
var _ files = localFiles{}
