package registry

// syncDir is a no-op on Windows, where directories cannot be opened for
// fsync and MoveFileEx is already durable enough for renameio's purposes.
func syncDir(string) error { return nil }
