package codexchild

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestThreadNotes: notes wait per thread and are taken once.
func TestThreadNotes(t *testing.T) {
	var n threadNotes
	n.add("t1", "a")
	n.add("t1", "b")
	n.add("t2", "c")
	n.add("", "ignored")
	got := []string{n.take("t1"), n.take("t1"), n.take("t2"), n.take("t3")}
	if diff := cmp.Diff([]string{"a\n\nb\n\n", "", "c\n\n", ""}, got); diff != "" {
		t.Errorf("take (-want +got):\n%s", diff)
	}
}
