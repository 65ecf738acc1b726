package workspace

import (
	"os"
	"strconv"
	"strings"
)

// procStart returns the start time of process pid in clock ticks after
// boot (field 22 of /proc/<pid>/stat), or "" when it cannot be read.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces: the
	// fields after the last ')' start with field 3.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
