package storerules

import (
	"fmt"

	"github.com/taskwire/taskwire/backend"
)

// CheckCheckpoint checks one checkpoint a store is asked to keep: 1 to
// backend.MaxCheckpointBytes bytes (backend.ErrInvalidCheckpoint). The
// error names the sizes, never the bytes.
func CheckCheckpoint(data []byte) error {
	switch {
	case len(data) == 0:
		return fmt.Errorf("%w: a checkpoint must not be empty", backend.ErrInvalidCheckpoint)
	case len(data) > backend.MaxCheckpointBytes:
		return fmt.Errorf("%w: %d bytes exceed the bound of %d (backend.MaxCheckpointBytes)", backend.ErrInvalidCheckpoint,
			len(data), backend.MaxCheckpointBytes)
	}
	return nil
}

// CheckCheckpoints checks the items of one SaveCheckpoints call, every one
// before anything is written: at most backend.MaxCheckpointBatch items,
// each passing CheckCheckpoint.
func CheckCheckpoints(items []backend.CheckpointWrite) error {
	if len(items) > backend.MaxCheckpointBatch {
		return fmt.Errorf("%w: %d items exceed the bound of %d (backend.MaxCheckpointBatch)", backend.ErrInvalidCheckpoint,
			len(items), backend.MaxCheckpointBatch)
	}
	for i, it := range items {
		if err := CheckCheckpoint(it.Data); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	return nil
}
