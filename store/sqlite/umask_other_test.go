//go:build !unix

package sqlite_test

import "testing"

// setUmask does nothing where there is no umask.
func setUmask(*testing.T, int) {}
