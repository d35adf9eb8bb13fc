//go:build !unix

package main

// descriptorLimit reports the limit unknown where there is no RLIMIT_NOFILE.
func descriptorLimit() (uint64, bool) { return 0, false }
