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
	for _, want := range []string{"-- run 4 of 4", "200 of 200 tasks carry their progress count", "progress report: median worker throughput",
		"median CPU of this process per job", "by CPU per job", "relative to without"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestProgressVerdict: the verdict states the target on both figures, each
// from the medians of its runs.
func TestProgressVerdict(t *testing.T) {
	tests := []struct {
		name        string
		rates, cpus [2][]float64
		want        string
	}{
		{"both met", [2][]float64{{100, 200, 300}, {95, 190, 250}}, [2][]float64{{40, 41, 60}, {44, 45, 46}},
			"190 jobs/s with a report per job (runs: 95, 190, 250), 200 without (runs: 100, 200, 300): 95.0 %; " +
				"median CPU of this process per job 45.0 µs with (runs: 44.0, 45.0, 46.0), 41.0 µs without (runs: 40.0, 41.0, 60.0): 109.8 %; " +
				"within 10 %: by jobs/s met, by CPU per job met"},
		{"throughput missed", [2][]float64{{100, 100}, {80, 90}}, [2][]float64{{40, 40}, {40, 40}},
			"by jobs/s missed, by CPU per job met"},
		{"CPU missed", [2][]float64{{100, 100}, {100, 100}}, [2][]float64{{40, 40}, {44, 45}},
			"by jobs/s met, by CPU per job missed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compareProgress(tt.rates, tt.cpus).String(); !strings.HasSuffix(got, tt.want) {
				t.Errorf("verdict = %q, want it to end in %q", got, tt.want)
			}
		})
	}
}

// TestQueuesPhase runs sqlite-queues small: four runs, two with the jobs
// in one queue and two with them in -queues queues, and the verdict.
func TestQueuesPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the SQLite worker phase four times")
	}
	if _, err := parseFlags([]string{"-phases", "sqlite-queues", "-queues", "3", "-concurrency", "50", "-claim-batch", "20"}, io.Discard); err == nil {
		t.Errorf("parseFlags accepted -queues that does not divide -concurrency")
	}
	t.Setenv(asMainEnv, "1")
	var out bytes.Buffer
	err := run(context.Background(), []string{"-phases", "sqlite-queues", "-queues", "4", "-sqlite-n", "200",
		"-concurrency", "48", "-claim-batch", "20", "-tmp", t.TempDir()}, &out, &out)
	t.Logf("%s", &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-- run 2 of 4: 4 queues of 12 workers", "-- run 4 of 4: one queue",
		"queues: median worker throughput", "with the jobs in 4 queues (runs:", "in one queue (runs:",
		"median worker throughput with the jobs in 4 queues, relative to one queue"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
