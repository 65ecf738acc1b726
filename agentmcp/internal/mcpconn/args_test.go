package mcpconn

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/proxyerr"
	"github.com/google/go-cmp/cmp"
)

func TestArgsStrs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    string
		want    map[string]string
		wantErr string // the argument named in the error
	}{
		{"all given", `{"a":"x","b":"y"}`, map[string]string{"a": "x", "b": "y"}, ""},
		{"absent and null are empty", `{"a":"x","b":null}`, map[string]string{"a": "x", "b": "", "c": ""}, ""},
		{"not a string", `{"a":"x","b":3}`, nil, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a Args
			if err := json.Unmarshal([]byte(tc.args), &a); err != nil {
				t.Fatal(err)
			}
			names := []string{"a", "b"}
			if tc.want != nil {
				names = nil
				for n := range tc.want {
					names = append(names, n)
				}
			}
			got, err := a.Strs(names...)
			if tc.wantErr != "" {
				var pe *proxyerr.Error
				if !errors.As(err, &pe) || !errors.Is(err, proxyerr.ErrInvalidParams) || pe.Data["argument"] != tc.wantErr {
					t.Fatalf("Strs = %v, %v; want an invalid-params error for %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Strs (-want +got):\n%s", diff)
			}
		})
	}
}
