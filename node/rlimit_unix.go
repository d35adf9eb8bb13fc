//go:build unix

package node

import "syscall"

// descriptorLimit returns the process's soft limit on open files.
func descriptorLimit() (uint64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	return uint64(r.Cur), true
}
