package fsx

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLockDirExcludesAndReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json.lock")
	l, err := LockDir(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Fatalf("lock directory after LockDir: %v, %v", fi, err)
	}
	start := time.Now()
	if _, err := LockDir(context.Background(), path, 30*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("second LockDir error = %v, want ErrLockTimeout", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("second LockDir gave up after %v, before its timeout", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LockDir(ctx, path, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockDir with a cancelled context error = %v, want context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() {
		g, err := LockDir(context.Background(), path, 5*time.Second)
		if err == nil {
			err = g.Close()
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("LockDir after release: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("lock directory after the last Close: %v, want it gone", err)
	}
}

// A lock directory older than DirLockStale was left by a dead holder: it is
// taken over at once. One just under that age is not.
func TestLockDirStale(t *testing.T) {
	tests := []struct {
		name  string
		age   time.Duration
		takes bool
	}{
		{"abandoned", DirLockStale + time.Second, true},
		{"young", DirLockStale - 2*time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.json.lock")
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-tt.age)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
			l, err := LockDir(context.Background(), path, 50*time.Millisecond)
			if got := err == nil; got != tt.takes {
				t.Fatalf("LockDir on a lock %v old: err = %v, want taken %v", tt.age, err, tt.takes)
			}
			if err != nil {
				if !errors.Is(err, ErrLockTimeout) {
					t.Errorf("err = %v, want ErrLockTimeout", err)
				}
				return
			}
			fi, err := os.Stat(path)
			if err != nil || time.Since(fi.ModTime()) > time.Second {
				t.Errorf("taken-over lock: %v, %v; want a fresh directory", fi, err)
			}
			l.Close()
		})
	}
}

// A holder renews the directory's modification time, so a long hold never
// looks abandoned.
func TestLockDirRefresh(t *testing.T) {
	old := dirLockRefresh
	dirLockRefresh = 10 * time.Millisecond
	t.Cleanup(func() { dirLockRefresh = old })
	path := filepath.Join(t.TempDir(), "a.json.lock")
	l, err := LockDir(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(fi.ModTime()) < time.Minute {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("modification time not renewed: %v", fi.ModTime())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
