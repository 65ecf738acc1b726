package testscripts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// The invariants of TestSoak, checked once serve has exited.

// check tests the invariants after serve has exited.
func (s *soak) check() {
	t := s.t
	s.mu.Lock()
	for id, what := range s.sent {
		if n := s.answers[id]; n != 1 {
			t.Errorf("request %s (%s) was answered %d times, want once", id, what, n)
		}
	}
	for _, x := range s.strays {
		t.Errorf("stdout: %s", clipLog(x, 300))
	}
	mail := s.mail
	crashes := len(s.crashes)
	s.mu.Unlock()

	// No process of serve's tree is left.
	left := survivors(s.home)
	for deadline := time.Now().Add(5 * time.Second); len(left) > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		left = survivors(s.home)
	}
	if len(left) > 0 {
		t.Errorf("after serve exited, %d process(es) of its tree still run: %s", len(left), describe(left))
	}

	// The registry parses.
	b, err := os.ReadFile(filepath.Join(s.home, ".config", "atm", "agent-sessions", "dev", "proxy", "registry.json"))
	if err != nil {
		t.Errorf("registry: %v", err)
	} else if !json.Valid(b) {
		t.Errorf("registry.json is not JSON:\n%s", clipLog(string(b), 2000))
	}

	// Mail: no message is lost. Each reached a Codex turn, or is still
	// unread (its identity had no live session at the end, FR-8.3; drain
	// checked that the live ones took theirs). Mail is marked read only
	// once Codex acknowledged its turn (FR-8.12 as built), so a marked
	// message that no Codex read is a loss, whatever crashed. A message
	// reaches Codex twice only in the documented window: a child read its
	// turn and died (crashed, or was stopped by a restart) before
	// acknowledging it, and the mail was offered again to the next child.
	// So the copies of a message went to different Codex processes, and at
	// most one unacknowledged batch per session dies with each child.
	delivered := s.deliveries()
	marked := s.markedMail()
	unread := s.unread()
	children := s.children()
	deaths := crashes + int(s.restarts.Load())
	lost, dups, got, waiting := 0, 0, 0, 0
	for id, to := range mail {
		pids := delivered[id]
		switch n := len(pids); {
		case n == 0 && unread[id]:
			waiting++
		case n == 0:
			lost++
			t.Errorf("mail %s to %s never reached Codex, and is not unread (audited as marked read after a mail turn: %v)", id, to, marked[id])
		case n == 1:
			got++
		default:
			dups++
			got++
			t.Logf("mail %s to %s reached Codex %d times (Codex processes %v)", id, to, n, pids)
			if !slices.IsSorted(pids) || len(slices.Compact(slices.Clone(pids))) != n {
				t.Errorf("mail %s to %s reached Codex %d times, not each time in a new Codex process (pids %v): a duplicate outside the documented window", id, to, n, pids)
			}
		}
	}
	if max := deaths * len(soakIdentities) * soakMaxMessages; dups > max {
		t.Errorf("%d message(s) reached Codex twice, over %d (%d children died or were stopped, %d sessions, %d messages a batch)",
			dups, max, deaths, len(soakIdentities), soakMaxMessages)
	}

	// The log is bounded: lines per crash, restart and request, not per
	// attempt.
	logText, _ := os.ReadFile(s.stderr)
	lines := bytes.Count(logText, []byte("\n"))
	requests := int(s.requests.Load())
	limit := 200 + 20*(crashes+int(s.restarts.Load())) + 4*requests + 2*len(mail)
	if lines > limit {
		t.Errorf("the log has %d lines, over %d (for %d crashes, %d restarts, %d requests, %d mail)", lines, limit, crashes, s.restarts.Load(), requests, len(mail))
	}
	// A mail turn fails when Codex dies or is restarted under it, or its
	// session is closed: at most once per session and event.
	failed := len(regexp.MustCompile(`auto-mail turn failed`).FindAll(logText, -1))
	if max := len(soakIdentities) * (crashes + int(s.restarts.Load()) + int(s.closes.Load()) + 1); failed > max {
		t.Errorf("%d auto-mail turns failed, over %d: retried while Codex was down?", failed, max)
	}
	t.Logf("%s: %d requests, %d crashes, %d restarts, %d Codex processes, %d outside mail (%d delivered, %d of them twice, %d unread), %d log lines, %d failed mail turns",
		s.backend, requests, crashes, s.restarts.Load(), len(children), len(mail), got, dups, waiting, lines, failed)
}

// mailID finds the ids of the messages in a mail turn's envelope.
var mailID = regexp.MustCompile(`<message from="[^"]*" team="[^"]*" timestamp="[^"]*" id="([^"]+)">`)

// soakMaxMessages is the most messages a mail turn carries (serve's
// default max_messages).
const soakMaxMessages = 10

// deliveries lists, per message id, the Codex processes (their order of
// start, from 1) that received a turn whose prompt (the user's input, not
// the instructions) carried the message, one entry per turn, from
// mockcodex's log of what it received.
func (s *soak) deliveries() map[string][]int {
	n := map[string][]int{}
	order := map[int]int{} // pid → its order of start
	f, err := os.Open(filepath.Join(s.home, "child.jsonl"))
	if err != nil {
		s.t.Errorf("mockcodex's log: %v", err)
		return n
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line struct {
			PID int `json:"pid"`
			Msg struct {
				Method string `json:"method"`
				Params struct {
					Arguments struct { // mcp-server tools/call
						Prompt string `json:"prompt"`
					} `json:"arguments"`
					Input []struct {
						Text string `json:"text"`
					} `json:"input"` // app-server turn/start
				} `json:"params"`
			} `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if _, ok := order[line.PID]; !ok {
			order[line.PID] = len(order) + 1
		}
		var prompt string
		switch line.Msg.Method {
		case "tools/call":
			prompt = line.Msg.Params.Arguments.Prompt
		case "turn/start":
			for _, in := range line.Msg.Params.Input {
				prompt += in.Text
			}
		}
		for _, m := range mailID.FindAllStringSubmatch(prompt, -1) {
			n[m[1]] = append(n[m[1]], order[line.PID])
		}
	}
	if err := sc.Err(); err != nil {
		s.t.Errorf("mockcodex's log: %v", err)
	}
	return n
}

// children returns the pids of the Codex processes serve started (the
// "argv" line each writes at start in mockcodex's log).
func (s *soak) children() []int {
	b, err := os.ReadFile(filepath.Join(s.home, "child.jsonl"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, line := range bytes.Split(b, []byte("\n")) {
		var l struct {
			PID  int      `json:"pid"`
			Argv []string `json:"argv"`
		}
		if json.Unmarshal(line, &l) == nil && l.Argv != nil {
			pids = append(pids, l.PID)
		}
	}
	return pids
}

// markedMail returns the ids of the messages the proxy marked read after
// a mail turn, from the audit log's turn:auto-mail entries ("delivered N
// message(s) (key, key), marked N read").
func (s *soak) markedMail() map[string]bool {
	ids := map[string]bool{}
	b, err := os.ReadFile(filepath.Join(s.home, ".config", "atm", "agent-sessions", "dev", "audit.jsonl"))
	if err != nil {
		s.t.Errorf("audit log: %v", err)
		return ids
	}
	keys := regexp.MustCompile(`^delivered [0-9]+ message\(s\) \(([^)]*)\)`)
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e struct{ Event, Outcome string }
		if json.Unmarshal(line, &e) != nil || e.Event != "turn:auto-mail" {
			continue
		}
		if m := keys.FindStringSubmatch(e.Outcome); m != nil {
			for _, k := range strings.Split(m[1], ", ") {
				ids[strings.TrimPrefix(k, "id:")] = true // atmclient.Message.Key of mail with an id
			}
		}
	}
	return ids
}

// unread returns the ids of the messages still unread in the sessions'
// inboxes.
func (s *soak) unread() map[string]bool {
	atm, err := atmclient.New(atmclient.Config{Home: s.home})
	if err != nil {
		s.t.Error(err)
		return nil
	}
	ids := map[string]bool{}
	for _, who := range soakIdentities {
		res, err := atm.Read(context.Background(), "dev", who, atmclient.ReadOptions{})
		if err != nil {
			s.t.Errorf("reading %s's inbox: %v", who, err)
			continue
		}
		for _, m := range res.Messages {
			ids[m.ID()] = true
		}
	}
	return ids
}
