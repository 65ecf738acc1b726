package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

const summaryFile = "summary.md"

// SummaryPath returns {team}/{identity}/{backendID}/summary.md.
func (d Dir) SummaryPath(identity, backendID string) (string, error) {
	if err := validIdentity(identity); err != nil {
		return "", err
	}
	if err := validBackendID(backendID); err != nil {
		return "", err
	}
	return filepath.Join(d.summaryDir(identity, backendID), summaryFile), nil
}

// WriteSummary atomically replaces the summary of the Codex thread
// backendID of identity (FR-6.4), creating its directory (0700) if needed.
func (d Dir) WriteSummary(identity, backendID, text string) error {
	path, err := d.SummaryPath(identity, backendID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if err := writeFileAtomic(path, []byte(text)); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// ReadSummary returns the saved summary of the Codex thread backendID of
// identity. If there is none the error wraps [fs.ErrNotExist].
func (d Dir) ReadSummary(identity, backendID string) (string, error) {
	path, err := d.SummaryPath(identity, backendID)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read summary: %w", err)
	}
	return string(b), nil
}

// HasSummary reports whether a summary is saved for the Codex thread
// backendID of identity.
func (d Dir) HasSummary(identity, backendID string) bool {
	path, err := d.SummaryPath(identity, backendID)
	if err != nil {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// Summaries returns, sorted, the backend ids of identity that have a saved
// summary. An identity with no directory has none.
func (d Dir) Summaries(identity string) ([]string, error) {
	if err := validIdentity(identity); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d.instanceDir(identity))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list summaries: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && d.HasSummary(identity, e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}
