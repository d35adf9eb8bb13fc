package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestProgressMode runs the SQLite worker phase with -progress on a tiny
// size: four runs, every task keeps its count, and the comparison is
// printed.
func TestProgressMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the SQLite worker phase four times")
	}
	for _, bad := range [][]string{{"-progress-rounds", "0"}, {"-progress-rounds", "11"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
	t.Setenv(asMainEnv, "1")
	var out bytes.Buffer
	err := run(context.Background(), []string{"-phases", "sqlite-worker", "-progress", "-sqlite-n", "200",
		"-concurrency", "50", "-claim-batch", "20", "-tmp", t.TempDir()}, &out, &out)
	t.Logf("%s", &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-- run 4 of 4", "200 of 200 tasks carry their progress count", "progress: median worker throughput",
		"relative to without"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
