//go:build unix

package sqlite_test

import (
	"syscall"
	"testing"
)

// setUmask sets the process's umask for the rest of the test and restores
// the old one when it ends. The umask is the process's: tests that call it
// must not run in parallel.
func setUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}
