package registry

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scanRow is what a reader of the team directory learns of one instance.
type scanRow struct {
	Instance string
	PID      int
	Running  bool
	Sessions map[string][2]string // agent_id: status, thread state
}

func scanRows(t *testing.T, d Dir) []scanRow {
	t.Helper()
	insts, err := d.Scan()
	if err != nil {
		t.Fatal(err)
	}
	var rows []scanRow
	for _, in := range insts {
		if in.Err != nil {
			t.Fatalf("instance %s: %v", in.Identity, in.Err)
		}
		r := scanRow{Instance: in.Identity, PID: in.Owner.PID, Running: in.Running, Sessions: map[string][2]string{}}
		for _, s := range in.Sessions {
			r.Sessions[s.AgentID] = [2]string{string(s.Status), string(s.ThreadState)}
		}
		rows = append(rows, r)
	}
	return rows
}

// TestScanSeesTheOwnerDie: the sessions of a proxy killed with SIGKILL
// read stale from another process at once, without any Open of that
// instance, and the instance names the pid it had; while the proxy runs
// they read as it wrote them. The registry file is not touched.
func TestScanSeesTheOwnerDie(t *testing.T) {
	home := testHome(t)
	c := startChild(t, "serve", "ATM_HOME="+home, "CHILD_TEAM=team", "CHILD_IDENTITY=lead",
		"CHILD_AGENT=codex-live", "CHILD_SESSION=arch")
	c.expectPrefix("ready")
	d, err := TeamDir(home, "team")
	if err != nil {
		t.Fatal(err)
	}
	pid := c.cmd.Process.Pid
	live := scanRow{Instance: "lead", PID: pid, Running: true, Sessions: map[string][2]string{
		"codex-live": {"idle", "idle"}, "codex-done": {"closed", "closed"}}}
	if diff := cmp.Diff([]scanRow{live}, scanRows(t, d)); diff != "" {
		t.Errorf("while the proxy runs (-want +got):\n%s", diff)
	}
	before, _ := os.ReadFile(d.registryPath("lead"))

	c.kill()
	dead := scanRow{Instance: "lead", PID: pid, Running: false, Sessions: map[string][2]string{
		"codex-live": {"stale", "closed"}, "codex-done": {"closed", "closed"}}}
	if diff := cmp.Diff([]scanRow{dead}, scanRows(t, d)); diff != "" {
		t.Errorf("after SIGKILL (-want +got):\n%s", diff)
	}
	if h, running := d.Owner("arch"); running || h.PID != pid {
		t.Errorf("Owner(arch) = %+v, %v; want the dead pid %d, not running", h, running, pid)
	}
	if after, _ := os.ReadFile(d.registryPath("lead")); string(after) != string(before) {
		t.Error("Scan rewrote the dead proxy's registry")
	}
	// The next Open agrees with what Scan showed.
	r := openTest(t, "lead", nil)
	if s, _ := r.ByAgentID("codex-live"); s.Status != StatusStale {
		t.Errorf("after Open: %s, want stale", s.Status)
	}
	if _, running := d.Owner("lead"); !running {
		t.Error("Owner(lead) of this process's open registry: not running")
	}
}
