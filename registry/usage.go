package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Usage is a session's token usage over its life, in every process that
// ran it, as its agent reported it (nothing estimated): what a later serve
// that resumes the session starts counting from, and what a team's total
// adds up for sessions that are closed or run by other serves.
type Usage struct {
	Tokens
	// Thread is the thread that reported last and Last its totals so far
	// as it last reported them, a part of Tokens: a serve that resumes the
	// session and hears that thread's totals again (Codex keeps them with
	// the thread) replaces that part instead of adding to it. "" and nil
	// when no thread reported.
	Thread string  `json:"thread,omitempty"`
	Last   *Tokens `json:"last,omitempty"`
}

// Tokens are token counts and the cost an agent reported with them.
type Tokens struct {
	// InputTokens are the prompt tokens, cached ones included.
	InputTokens int64 `json:"input_tokens"`
	// CachedInputTokens are the input tokens read from the provider's
	// cache.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	// OutputTokens are the tokens the model wrote.
	OutputTokens int64 `json:"output_tokens"`
	// TotalTokens is the agent's own total.
	TotalTokens int64 `json:"total_tokens"`
	// Cost is what the agent said the tokens cost; nil when it said
	// nothing (a cost from a price table is not kept: it follows from the
	// tokens and the model).
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is an amount of money in a currency ("USD").
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// clone returns a copy of u that shares nothing with it.
func (u *Usage) clone() *Usage {
	if u == nil {
		return nil
	}
	c := *u
	c.Tokens = u.Tokens.clone()
	if u.Last != nil {
		l := u.Last.clone()
		c.Last = &l
	}
	return &c
}

func (t Tokens) clone() Tokens {
	if t.Cost != nil {
		c := *t.Cost
		t.Cost = &c
	}
	return t
}

// teamBudgetFile is the team's token budget as raised at run time
// ({team}/budget.json).
const teamBudgetFile = "budget.json"

// TeamBudget is a team's token budget as it was last raised (or lowered)
// at run time: it wins over the configured one in every serve of the
// team.
type TeamBudget struct {
	// Tokens is the budget: every session of the team together, in every
	// serve, closed ones included; 0 means none.
	Tokens int64 `json:"tokens"`
	// By is the identity of the serve that set it, At when.
	By string    `json:"by,omitempty"`
	At time.Time `json:"at"`
}

// ReadTeamBudget returns the team's budget as last set with
// WriteTeamBudget; ok is false when none was.
func (d Dir) ReadTeamBudget() (b TeamBudget, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(d.root, teamBudgetFile))
	if errors.Is(err, fs.ErrNotExist) {
		return TeamBudget{}, false, nil
	}
	if err != nil {
		return TeamBudget{}, false, fmt.Errorf("registry: team budget: %w", err)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return TeamBudget{}, false, fmt.Errorf("registry: team budget %s: %w", filepath.Join(d.root, teamBudgetFile), err)
	}
	return b, true, nil
}

// WriteTeamBudget sets the team's budget for every serve of the team
// (atomically: a reader sees the old budget or the new one).
func (d Dir) WriteTeamBudget(b TeamBudget) error {
	if err := os.MkdirAll(d.root, dirPerm); err != nil {
		return fmt.Errorf("registry: team budget: %w", err)
	}
	data, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("registry: team budget: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(d.root, teamBudgetFile), append(data, '\n')); err != nil {
		return fmt.Errorf("registry: team budget: %w", err)
	}
	return nil
}
