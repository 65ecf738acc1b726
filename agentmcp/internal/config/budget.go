package config

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Price is a model's price from [plugins.atm-agent-mcp.prices.<model>],
// per million tokens: what the cost of an agent's tokens is computed from
// (nothing is guessed: a model without a price has the cost its agent
// reports, or none).
type Price struct {
	// Input is the price of input tokens not read from the cache (input).
	Input float64 `json:"input"`
	// CachedInput is the price of cached input tokens (cached_input);
	// Input's when the table gives none.
	CachedInput float64 `json:"cached_input"`
	// Output is the price of output tokens (output).
	Output float64 `json:"output"`
	// Currency is the price's currency (currency); "USD" when none is
	// given.
	Currency string `json:"currency"`
}

// DefaultCurrency is a price's currency when its table names none.
const DefaultCurrency = "USD"

// priceKeys are the keys of a price table.
var priceKeys = []string{"input", "cached_input", "output", "currency"}

// resolveBudgets resolves the token budgets and the price table.
func (r *resolver) resolveBudgets(cfg *Config) {
	cfg.BudgetTokens = r.integer("budget_tokens", 0, 0, std("budget_tokens", ""))
	cfg.TeamBudgetTokens = r.integer("team_budget_tokens", 0, 0, std("team_budget_tokens", ""))
	cfg.BudgetInterrupt = r.boolean("budget_interrupt", false, std("budget_interrupt", ""))
	cfg.Prices = r.prices()
}

// roleBudget resolves a role preset's budget_tokens.
func (r *resolver) roleBudget(name string) int {
	return r.integer("roles."+name+".budget_tokens", 0, 0, []lookup{pluginL("roles", name, "budget_tokens")})
}

// prices resolves [plugins.atm-agent-mcp.prices.<model>]: each model's
// keys merged across files, the higher file winning per key. A model needs
// input and output; cached_input is input's and currency USD when not
// given.
func (r *resolver) prices() map[string]Price {
	names := r.sections(namedTable{table: "prices", holds: "model prices", entry: "model", quote: true,
		section: "a table of input, cached_input, output (per million tokens) and currency"})
	if len(names) == 0 {
		return nil
	}
	out := make(map[string]Price, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		key := func(k string) string { return "prices." + name + "." + k }
		at := func(k string) []lookup { return []lookup{pluginL("prices", name, k)} }
		p := Price{
			Input:    r.price(key("input"), at("input")),
			Output:   r.price(key("output"), at("output")),
			Currency: r.str(key("currency"), DefaultCurrency, at("currency")),
		}
		for _, k := range []string{"input", "output"} {
			if r.sources[key(k)].Kind == SourceDefault {
				r.errs = append(r.errs, &Error{Key: key(k), Source: Source{Kind: SourceFile, Key: pluginKeyPrefix + key(k)}, Value: "nothing",
					Expected: "the price of " + k + " tokens per million (a number): a price is never guessed"})
			}
		}
		p.CachedInput = p.Input
		if _, _, ok := r.find(at("cached_input")); ok {
			p.CachedInput = r.price(key("cached_input"), at("cached_input"))
		}
		out[name] = p
	}
	return out
}

// price resolves a price per million tokens: a number of 0 or more.
func (r *resolver) price(key string, chain []lookup) float64 {
	return r.resolve(key, 0.0, chain, decoder{
		expected: "a number of 0 or more (per million tokens)",
		decode: func(v any, _ Source) (any, bool) {
			switch n := v.(type) {
			case float64:
				return n, n >= 0
			case int64:
				return float64(n), n >= 0
			}
			return 0.0, false
		},
	}).(float64)
}

// budgetEntries are the budgets and prices as `config` shows them: the
// three keys, each role's budget_tokens, then each model's price.
func (c *Config) budgetEntries() []Entry {
	es := []Entry{
		{Key: "budget_tokens", Value: c.BudgetTokens, Source: c.Sources["budget_tokens"]},
		{Key: "team_budget_tokens", Value: c.TeamBudgetTokens, Source: c.Sources["team_budget_tokens"]},
		{Key: "budget_interrupt", Value: c.BudgetInterrupt, Source: c.Sources["budget_interrupt"]},
	}
	for _, name := range slices.Sorted(maps.Keys(c.Roles)) {
		if b := c.Roles[name].BudgetTokens; b > 0 {
			k := "roles." + name + ".budget_tokens"
			es = append(es, Entry{Key: k, Value: b, Source: c.Sources[k]})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Prices)) {
		p := c.Prices[name]
		k := "prices." + name
		v := strings.Join([]string{"input " + num(p.Input), "cached_input " + num(p.CachedInput), "output " + num(p.Output)}, ", ") +
			" " + p.Currency + " per million tokens"
		es = append(es, Entry{Key: k, Value: v, Source: c.Sources[k+".input"]})
	}
	return es
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// BudgetFor returns the token budget of a session started with role (""
// for none): the role preset's budget_tokens when it sets one, else
// budget_tokens; 0 means none.
func (c *Config) BudgetFor(role string) int {
	if r, ok := c.Roles[role]; ok && r.BudgetTokens > 0 {
		return r.BudgetTokens
	}
	return c.BudgetTokens
}

// priceWarnings warns about the keys of a file's price tables that nothing
// reads.
func priceWarnings(f *fileLayer) []Warning {
	var ws []Warning
	prices, _ := f.plugin["prices"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(prices)) {
		t, _ := prices[name].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if !slices.Contains(priceKeys, k) {
				ws = append(ws, Warning{File: f.path, Key: pluginKeyPrefix + "prices." + strconv.Quote(name) + "." + k, Message: "unknown price key, ignored" + suggest(k, priceKeys)})
			}
		}
	}
	return ws
}
