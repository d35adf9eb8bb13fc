//go:build !race

package docsnippets

// raceEnabled: the test binary was built with -race.
const raceEnabled = false
