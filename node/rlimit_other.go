//go:build !unix

package node

// descriptorLimit reports the limit unknown where there is no RLIMIT_NOFILE.
func descriptorLimit() (uint64, bool) { return 0, false }
