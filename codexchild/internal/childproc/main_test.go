package childproc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/codexchild/guard"
)

// helperEnv makes the test binary a child of the tests: its value is the
// mode (helper).
const helperEnv = "CHILDPROC_HELPER"

// guardArg makes the test binary run package guard's Main, as serve runs
// it (Config.Guard = {test binary, guardArg}).
const guardArg = "childproc-test-guard"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == guardArg {
		os.Exit(guard.Main(os.Args[2:]))
	}
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helper is the test binary as a child:
//
//	echo        copy stdin to stdout until EOF, then exit 0
//	exit N      exit with code N
//	stderr      write the stderr lines the tests expect, then wait for EOF
//	where       print the working directory and $CHILDPROC_WHERE, exit 0
//	garbage     write lines that are not JSON-RPC until killed
//	nostdin     read nothing, sleep until killed
//	stubborn F  ignore SIGTERM, start a grandchild that ignores it too
//	            and writes its pid to file F, then sleep until killed
//	sleep       ignore SIGTERM and sleep until killed
func helper(mode string, args []string) int {
	switch mode {
	case "echo":
		_, _ = io.Copy(os.Stdout, os.Stdin)
		return 0
	case "exit":
		n, _ := strconv.Atoi(args[0])
		return n
	case "stderr":
		for i := range stderrLines {
			fmt.Fprintln(os.Stderr, stderrLines[i])
		}
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "where":
		wd, _ := os.Getwd()
		fmt.Println(wd)
		fmt.Println(os.Getenv("CHILDPROC_WHERE"))
		return 0
	case "garbage":
		w := bufio.NewWriter(os.Stdout)
		for {
			if _, err := w.WriteString("this is not JSON-RPC\n"); err != nil {
				return 1
			}
		}
	case "nostdin":
		time.Sleep(time.Hour)
		return 0
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=sleep")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if err := os.WriteFile(args[0], []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		time.Sleep(time.Hour)
		return 0
	case "sleep":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}
