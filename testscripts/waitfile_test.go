package testscripts

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdWaitFile waits until a file written by another process (an inbox that
// serve answers into) matches a regular expression:
//
//	waitfile [-count=N] FILE REGEXP
//
// It waits for at least N matches (default 1), at most waitLimit, and
// prints the file. A missing file counts as empty.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! waitfile (wait for what comes, then check what did not)")
	}
	count := 1
	if len(args) > 0 && strings.HasPrefix(args[0], "-count=") {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "-count="))
		if err != nil || n < 1 {
			ts.Fatalf("waitfile: bad %s", args[0])
		}
		count, args = n, args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: waitfile [-count=N] FILE REGEXP")
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("waitfile: %v", err)
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(waitLimit(ts))
	for {
		b, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			ts.Fatalf("waitfile: %v", err)
		}
		if len(re.FindAllIndex(b, -1)) >= count {
			ts.Logf("%s:\n%s", args[0], b)
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s has %d matches of %q after %v, want %d:\n%s", args[0],
				len(re.FindAllIndex(b, -1)), args[1], waitLimit(ts), count, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
