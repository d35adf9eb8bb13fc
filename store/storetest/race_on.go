//go:build race

package storetest

// raceEnabled reports that the race detector is on: it slows SQL engines
// written in Go by an order of magnitude, so the sequential model test runs
// fewer sequences (the race detector adds nothing to it).
const raceEnabled = true
