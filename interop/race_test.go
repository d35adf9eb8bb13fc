//go:build race

package interop

// raceEnabled makes TestMain build the server with the race detector too.
const raceEnabled = true
