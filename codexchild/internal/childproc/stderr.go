package childproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"

	"github.com/atm-agent-mcp/atm-agent-mcp/jsonrpcframe"
)

const (
	// stderrTailLines is how many of the child's last stderr lines an
	// *ExitError carries.
	stderrTailLines = 20
	// maxStderrLine cuts a stderr line (one without a newline for
	// megabytes) before it is logged or kept.
	maxStderrLine = 4096
)

// drainStderr logs every line of the child's stderr, its terminal escapes
// stripped, and keeps the last few. It never stops reading before EOF (or
// the supervisor's close of r), so the child cannot block on a full
// stderr pipe.
func (p *Process) drainStderr(r *os.File) {
	defer r.Close()
	br := bufio.NewReaderSize(jsonrpcframe.PipeReader(r), 16<<10)
	var long []byte // a line longer than the buffer, cut to maxStderrLine
	for {
		frag, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long) < maxStderrLine {
				long = append(long, frag[:min(len(frag), maxStderrLine-len(long))]...)
			}
			continue
		}
		line := frag
		if long != nil {
			if len(long) < maxStderrLine {
				long = append(long, frag[:min(len(frag), maxStderrLine-len(long))]...)
			}
			line, long = long, nil
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > maxStderrLine {
			line = line[:maxStderrLine]
		}
		if len(line) > 0 {
			p.stderrLine(StripANSI(string(line)))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				p.log.Warn(p.name+" stderr read failed", "err", err)
			}
			return
		}
	}
}

// stderrLine logs one line of stderr and keeps it in the tail.
func (p *Process) stderrLine(s string) {
	level := slog.LevelInfo
	if p.level != nil {
		level = p.level(s)
	}
	p.log.Log(context.Background(), level, p.stderrMsg, "line", s)
	p.mu.Lock()
	if len(p.tail) == stderrTailLines {
		copy(p.tail, p.tail[1:])
		p.tail = p.tail[:stderrTailLines-1]
	}
	p.tail = append(p.tail, s)
	p.mu.Unlock()
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }

// ansiRE matches the terminal escape sequences a child colours its log
// with (Codex does).
var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// StripANSI removes terminal escape sequences from a line, so that the log
// holds text.
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansiRE.ReplaceAllString(s, "")
}
