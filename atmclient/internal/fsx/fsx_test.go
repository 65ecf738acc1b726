package fsx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.lock")
	f, err := Lock(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := Lock(context.Background(), path, 30*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("second Lock error = %v, want ErrLockTimeout", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("second Lock gave up after %v, before its timeout", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Lock(ctx, path, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context error = %v, want context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() {
		g, err := Lock(context.Background(), path, 5*time.Second)
		if err == nil {
			g.Close()
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	f.Close()
	if err := <-done; err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("lock file gone after use: %v", err)
	}
}

func TestExchangeAndRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := WriteNew(a, []byte("A")); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(b, []byte("B")); err != nil {
		t.Fatal(err)
	}
	if err := Exchange(a, b); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{a: "B", b: "A"} {
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("after Exchange %s = %q, want %q", path, got, want)
		}
	}
	if err := RenameNoReplace(a, b); !errors.Is(err, os.ErrExist) {
		t.Errorf("RenameNoReplace onto an existing file error = %v, want os.ErrExist", err)
	}
	c := filepath.Join(dir, "c")
	if err := RenameNoReplace(a, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(c); string(got) != "B" {
		t.Errorf("after RenameNoReplace c = %q, want %q", got, "B")
	}
	if err := SyncDir(dir); err != nil {
		t.Error(err)
	}
}
