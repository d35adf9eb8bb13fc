// Package proccpu reads the CPU time this process has used, for benchmarks
// that report CPU time per operation: on a machine shared with other work
// it varies less than the wall time, which also counts the waits for a
// core.
package proccpu
