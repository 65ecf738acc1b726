package tools

import (
	"cmp"
	"slices"
	"time"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/session"
)

// TaskView is one MCP task of a session (tasks.go), as agent_status and
// agent_sessions show it: its id and its state as tasks/get would give
// them now.
type TaskView struct {
	Status        string `json:"status"` // working, input_required, completed, failed or cancelled
	StatusMessage string `json:"status_message,omitempty"`
	TaskID        string `json:"task_id"`
}

// SessionDetail is agent_status with an agent_id: the session's detail,
// and its MCP tasks when its turns ran as tasks.
type SessionDetail struct {
	session.Detail
	// Tasks are the session's tasks that run now (oldest first), then the
	// last one that ended, while it is kept; omitted when none.
	Tasks []TaskView `json:"tasks,omitempty"`
	// Worktree is an isolated session's own worktree; omitted for others.
	Worktree *WorktreeView `json:"worktree,omitempty"`
}

// SessionRow is a row of agent_sessions: the session's view, and its MCP
// tasks as in SessionDetail.
type SessionRow struct {
	session.View
	Tasks    []TaskView    `json:"tasks,omitempty"`
	Worktree *WorktreeView `json:"worktree,omitempty"`
}

// sessionTasks returns the tasks of agentID that run now, oldest first,
// and after them the one that ended last, if one is still kept; nil when
// the session has none. taskStore.mu is let go before the tasks are
// viewed (view reads the session).
func (st *taskStore) sessionTasks(agentID string, now time.Time) []TaskView {
	st.mu.Lock()
	st.gcLocked()
	var running []*task
	var last *task
	for _, tk := range st.byID {
		switch {
		case tk.agentID != agentID:
		case tk.ended.IsZero():
			running = append(running, tk)
		case last == nil || tk.ended.After(last.ended):
			last = tk
		}
	}
	st.mu.Unlock()
	slices.SortFunc(running, func(a, b *task) int {
		return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.id, b.id))
	})
	if last != nil {
		running = append(running, last)
	}
	var out []TaskView
	for _, tk := range running {
		v := st.view(tk, now)
		out = append(out, TaskView{TaskID: v.ID, Status: v.Status, StatusMessage: v.StatusMessage})
	}
	return out
}
