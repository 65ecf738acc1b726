package view

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// diff answers GET /api/diff?serve=S&agent_id=A: an isolated agent's
// change against its base, as the serve that runs it reads it with git
// ({"patch": …, "more": true when cut}). It changes nothing, so the token
// and Host the guard checks are all it needs; no other origin can read it
// (no CORS, Cross-Origin-Resource-Policy same-origin).
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	serve, agentID := q.Get("serve"), q.Get("agent_id")
	if serve == "" || agentID == "" {
		httpError(w, http.StatusBadRequest, "diff: serve and agent_id are required")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	patch, more, err := s.cfg.Team.Diff(ctx, serve, agentID)
	if err != nil {
		httpError(w, http.StatusConflict, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "patch": patch, "more": more})
}
