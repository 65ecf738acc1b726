package jsonarray

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", `[]`, []string{}},
		{"empty with space", " [ \n ] \n", []string{}},
		{"scalars", `[1, "a", true, null]`, []string{"1", `"a"`, "true", "null"}},
		{"objects", "[\n  {\"a\": [1, {\"b\": \"]}\"}]},\n  {}\n]", []string{`{"a": [1, {"b": "]}"}]}`, "{}"}},
		{"escaped quotes", `["a\"b", "c\\", "d\\\"e"]`, []string{`"a\"b"`, `"c\\"`, `"d\\\"e"`}},
		{"invalid element kept", `[{"a": tru}, 2]`, []string{`{"a": tru}`, "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split([]byte(tt.in))
			if err != nil {
				t.Fatalf("Split(%q): %v", tt.in, err)
			}
			var gs []string
			for _, g := range got {
				gs = append(gs, string(g))
			}
			if gs == nil {
				gs = []string{}
			}
			if diff := cmp.Diff(tt.want, gs); diff != "" {
				t.Errorf("Split(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSplitErrors(t *testing.T) {
	for _, in := range []string{
		``, `{}`, `[`, `[1`, `[1,`, `[1,]`, `[,1]`, `[1 2]`, `["a]`, `[{"a": 1]`, `[{"a": [1}]`, `[] x`, `[1]]`, `[}`,
	} {
		if _, err := Split([]byte(in)); !errors.Is(err, ErrSyntax) {
			t.Errorf("Split(%q) error = %v, want ErrSyntax", in, err)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{`[]`, `[1, {"a": "b\"]"}]`, `[{"from":"x"}]`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		elems, err := Split(data)
		if err != nil {
			return
		}
		for _, e := range elems {
			if len(e) == 0 {
				t.Fatalf("Split(%q) returned an empty element", data)
			}
		}
	})
}
