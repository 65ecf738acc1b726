package registry

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Child roles, run by TestMain in a re-executed test binary. They talk on
// stdout, one line per event, and return the exit code.
func runChild(role string) int {
	var err error
	switch role {
	case "persist-loop":
		err = childPersistLoop()
	case "claim":
		err = childClaim()
	case "audit":
		err = childAudit()
	case "serve":
		err = childServe()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

const (
	crashTeam     = "crash"
	crashInstance = "inst"
	counterID     = "codex-counter"
)

// crashPayload is the extra field persisted with counter n. Its length
// varies so that a torn write would be visible.
func crashPayload(n int) json.RawMessage {
	return json.RawMessage(strconv.Quote(strings.Repeat(strconv.Itoa(n%10), (n%37)*97)))
}

// childPersistLoop opens the crash registry and persists the counter
// session forever, printing "ack N" after each persist of counter N has
// returned.
func childPersistLoop() error {
	r, err := Open(Config{Team: crashTeam, Identity: crashInstance})
	if err != nil {
		return err
	}
	s, ok := r.ByAgentID(counterID)
	if !ok {
		return errors.New("counter session missing")
	}
	n, err := strconv.Atoi(s.Tag)
	if err != nil {
		return err
	}
	fmt.Printf("ready %d\n", n)
	for {
		n++
		_, err := r.Update(counterID, func(s *Session) {
			s.Tag = strconv.Itoa(n)
			s.Extra = map[string]json.RawMessage{"payload": crashPayload(n)}
		})
		if err != nil {
			return err
		}
		fmt.Printf("ack %d\n", n)
	}
}

// childClaim opens the registry of $CHILD_IDENTITY in $CHILD_TEAM each
// time it reads "open" on stdin and prints "won", "conflict PID" or
// "error ...". It exits on EOF.
func childClaim() error {
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	var held *Registry
	for sc.Scan() {
		if sc.Text() != "open" {
			return fmt.Errorf("unknown command %q", sc.Text())
		}
		if held != nil {
			fmt.Println("error already open")
			continue
		}
		r, err := Open(Config{Team: os.Getenv("CHILD_TEAM"), Identity: os.Getenv("CHILD_IDENTITY")})
		var ce *ConflictError
		switch {
		case err == nil:
			held = r
			fmt.Println("won")
		case errors.As(err, &ce):
			fmt.Printf("conflict %d\n", ce.HolderPID)
		default:
			fmt.Printf("error %v\n", err)
		}
	}
	return nil
}

// childAudit appends $CHILD_N entries tagged $CHILD_TAG to the audit log
// of $CHILD_TEAM and prints "done".
func childAudit() error {
	d, err := TeamDir("", os.Getenv("CHILD_TEAM"))
	if err != nil {
		return err
	}
	a, err := d.OpenAudit(AuditConfig{})
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(os.Getenv("CHILD_N"))
	tag := os.Getenv("CHILD_TAG")
	for i := range n {
		if err := a.Append(Entry{Event: EventATMSend, AgentID: tag, Identity: tag, Summary: fmt.Sprintf("%s %d %s", tag, i, strings.Repeat("x", 180))}); err != nil {
			return err
		}
	}
	if err := a.Close(); err != nil {
		return err
	}
	fmt.Println("done")
	return nil
}

// childServe plays a proxy: it opens the registry of $CHILD_IDENTITY in
// $CHILD_TEAM, records an idle session $CHILD_AGENT (identity
// $CHILD_SESSION) and a closed one, prints "ready" and holds them until
// stdin ends, then exits without closing anything.
func childServe() error {
	r, err := Open(Config{Team: os.Getenv("CHILD_TEAM"), Identity: os.Getenv("CHILD_IDENTITY")})
	if err != nil {
		return err
	}
	if _, err := r.Add(Session{AgentID: os.Getenv("CHILD_AGENT"), Identity: os.Getenv("CHILD_SESSION"), Status: StatusIdle,
		ThreadState: ThreadIdle, BackendID: "th-live"}); err != nil {
		return err
	}
	if _, err := r.Add(Session{AgentID: "codex-done", Identity: "done", Status: StatusClosed, ThreadState: ThreadClosed}); err != nil {
		return err
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
	}
	return nil
}
