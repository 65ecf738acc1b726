package feed

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RecordFile is the name of a feed's record in its serve's registry
// instance directory ({team}/{instance}/feed.json).
const RecordFile = "feed.json"

// Record is what a serve's feed.json says: where its socket is, and which
// serve it is.
type Record struct {
	Socket string `json:"socket"`
	Serve  Serve  `json:"serve"`
}

// writeRecord writes rec into dir (made 0700 if missing) atomically: a
// dot-prefixed temporary file in the same directory, fsynced, renamed
// over feed.json.
func writeRecord(dir string, rec Record) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("feed: record: %w", err)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", fmt.Errorf("feed: record: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+RecordFile+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("feed: record: %w", err)
	}
	defer os.Remove(tmp.Name()) // nothing once renamed
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", fmt.Errorf("feed: record: %w", err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("feed: record: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("feed: record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("feed: record: %w", err)
	}
	path := filepath.Join(dir, RecordFile)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("feed: record: %w", err)
	}
	return path, nil
}

// removeRecord removes a record written by writeRecord.
func removeRecord(path string) {
	if path != "" {
		_ = os.Remove(path)
	}
}

// Records returns the feed records under a team's registry directory
// (every {teamDir}/{instance}/feed.json), by instance. A record that
// cannot be read is left out; a missing directory has none.
func Records(teamDir string) (map[string]Record, error) {
	ents, err := os.ReadDir(teamDir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("feed: records: %w", err)
	}
	out := map[string]Record{}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(teamDir, e.Name(), RecordFile))
		if err != nil {
			continue
		}
		var rec Record
		if json.Unmarshal(b, &rec) != nil || rec.Socket == "" {
			continue
		}
		if rec.Serve.Instance == "" {
			rec.Serve.Instance = e.Name()
		}
		out[e.Name()] = rec
	}
	return out, nil
}
