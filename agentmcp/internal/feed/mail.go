package feed

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
	"github.com/atm-agent-mcp/atm-agent-mcp/atmclient"
)

// inboxState is what the poller last saw of one inbox file.
type inboxState struct {
	mod  time.Time
	size int64
	seen map[string]bool // message keys
}

// pollMail reads the team's inboxes whenever one changed: new mail goes
// out as mail frames (and into the ring a snapshot carries), and the
// unread counts into the agents' states. The first look only fills the
// ring.
func (f *Feed) pollMail() {
	defer f.wg.Done()
	ctx, cancel := f.ctxStop()
	defer cancel()
	dir, err := f.cfg.ATM.TeamDir(f.cfg.MailTeam)
	if err != nil {
		f.log.Info("no mail timeline: the team has no directory", "err", err)
		return
	}
	inboxes := filepath.Join(dir, "inboxes")
	state := map[string]*inboxState{}
	first := true
	tick := time.NewTicker(f.cfg.MailPoll)
	defer tick.Stop()
	for {
		var fresh []Mail
		unread := map[string]int{}
		ents, _ := os.ReadDir(inboxes)
		for _, e := range ents {
			name, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || e.IsDir() || strings.HasPrefix(name, ".") {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			st := state[name]
			if st == nil {
				st = &inboxState{seen: map[string]bool{}}
				state[name] = st
			}
			if st.mod.Equal(info.ModTime()) && st.size == info.Size() {
				unread[name] = f.unreadOf(name)
				continue
			}
			st.mod, st.size = info.ModTime(), info.Size()
			res, err := f.cfg.ATM.Read(ctx, f.cfg.MailTeam, name, atmclient.ReadOptions{All: true})
			if err != nil {
				continue
			}
			n := 0
			for _, m := range res.Messages {
				if !m.Read {
					n++
				}
				key := m.Key()
				if st.seen[key] {
					continue
				}
				st.seen[key] = true
				at, _ := m.Time()
				fresh = append(fresh, Mail{Key: name + "/" + key, From: strings.SplitN(m.From, "@", 2)[0], To: name, At: at,
					Summary: session.Clip(m.Summary, 200), Text: session.Clip(m.Text, 2000), Read: m.Read})
			}
			unread[name] = n
		}
		sort.SliceStable(fresh, func(i, j int) bool { return fresh[i].At.Before(fresh[j].At) })
		f.takeMail(fresh, unread, first)
		first = false
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
	}
}

// unreadOf is the last unread count of an inbox.
func (f *Feed) unreadOf(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unread[name]
}

// takeMail keeps new mail in the ring and sends it (not on the first
// look), and republishes the agents whose unread count changed.
func (f *Feed) takeMail(fresh []Mail, unread map[string]int, first bool) {
	var changed []string
	f.mu.Lock()
	for _, m := range fresh {
		f.mail = append(f.mail, m)
		if !first {
			f.broadcastLocked(Frame{Type: "mail", Mail: &m})
		}
	}
	if over := len(f.mail) - f.cfg.MailRing; over > 0 {
		f.mail = append([]Mail(nil), f.mail[over:]...)
	}
	for name, n := range unread {
		if f.unread[name] != n {
			f.unread[name] = n
			changed = append(changed, name)
		}
	}
	var ids []string
	for _, name := range changed {
		for id, p := range f.agents {
			if p.agent.Identity == name && p.agent.State != StateClosed {
				ids = append(ids, id)
			}
		}
	}
	f.mu.Unlock()
	for _, id := range ids {
		if s := f.sessions.Get(id); s != nil {
			f.SessionChanged(s)
		}
	}
}
