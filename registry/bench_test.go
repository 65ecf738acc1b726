package registry

import (
	"strconv"
	"testing"
)

func BenchmarkPersist100(b *testing.B)   { benchmarkPersist(b, 100) }
func BenchmarkPersist10000(b *testing.B) { benchmarkPersist(b, 10_000) }

// benchmarkPersist measures one Update of a registry with n sessions: the
// encoding, the write, both fsyncs and the rename.
func benchmarkPersist(b *testing.B, n int) {
	testHome(b)
	r, err := Open(Config{Team: "team", Identity: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for i := range n {
		r.sessions = append(r.sessions, fillerSession(i, StatusClosed))
	}
	if err := r.Persist(); err != nil {
		b.Fatal(err)
	}
	id := r.sessions[n-1].AgentID
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		if _, err := r.Update(id, func(s *Session) { s.Tag = strconv.Itoa(i) }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/persist")
}

// BenchmarkRedactPrompt redacts a typical turn prompt (no secrets): every
// turn's prompt goes through Redact into the audit log.
func BenchmarkRedactPrompt(b *testing.B) {
	prompt := "<session-context>\nIdentity:  arch\nTeam:      dev\nRepo:      app (/home/dev/app)\nBranch:    main\nCwd:       /home/dev/app\nAgent ID:  codex-arch-1\n</session-context>\nPlease fix the failing test in parser_test.go and run go test ./..."
	for b.Loop() {
		_ = Redact(prompt)
	}
}
