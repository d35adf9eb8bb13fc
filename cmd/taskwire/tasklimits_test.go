package main

import (
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/taskwire/taskwire/server"
)

// TestServeTaskBurst checks that serve applies its task-limit flags: with
// a burst of two and a rate that refills nothing during the test, the
// third creation is refused with HTTP 429, while inline calls go on.
func TestServeTaskBurst(t *testing.T) {
	dir := t.TempDir()
	runCommand(t, []string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(dir, "t.db"),
		"--workers", "0", "--task-rate", "0.001", "--task-burst", "2", "--shutdown-grace", "1s"},
		func(t *testing.T, url string) {
			c := newClient(t, url)
			args := map[string]any{"accountId": "a", "rows": 1, "seconds": 0}
			createTask(t, c, toolReports, args)
			createTask(t, c, toolReports, args)
			r, err := c.CallTool(t.Context(), toolReports, args)
			if err != nil {
				t.Fatalf("third creation: %v", err)
			}
			if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
				t.Fatalf("third creation: HTTP %d, Retry-After %q; want 429 with Retry-After", r.Status, r.Header.Get("Retry-After"))
			}
			if r, err := c.CallTool(t.Context(), "text.stats", map[string]any{"text": "x"}); err != nil || r.Status != http.StatusOK || r.Error != nil {
				t.Fatalf("inline call after the refusal: %v, HTTP %d, %v", err, statusOf(r), errOf(r))
			}
		})
}

// TestMaxActiveExactUnderFlood sends one caller's creations all at once,
// many more than --max-active-tasks allows, to a node on each store: no
// more tasks are created than the cap, however the calls interleave, and
// once the flood is over the caller can fill the cap exactly and no
// further.
func TestMaxActiveExactUnderFlood(t *testing.T) {
	const maxActive, flood = 20, 120 // fewer than the task share and its queue hold
	for name, spec := range bothStores() {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig("", 0) // no workers: every task stays working
			cfg.StoreSpec = spec(t)
			cfg.TaskLimits = server.TaskLimits{CreateRate: server.NoLimit, MaxActive: maxActive}
			n := start(t, cfg)
			cs := newClients(t, n.URL())
			args := map[string]any{"accountId": "a", "rows": 1, "seconds": 0}
			type answer struct {
				status int
				task   bool
			}
			answers := make(chan answer, flood)
			var wg sync.WaitGroup
			for range flood {
				wg.Go(func() {
					r, err := cs.client().CallTool(t.Context(), toolReports, args)
					if err != nil {
						t.Error(err)
						return
					}
					answers <- answer{status: r.Status, task: r.Status == http.StatusOK && r.Error == nil}
				})
			}
			wg.Wait()
			close(answers)
			created, refused := 0, 0
			defer func() { t.Logf("a flood of %d: %d created, %d refused", flood, created, refused) }()
			for a := range answers {
				switch {
				case a.task:
					created++
				case a.status == http.StatusTooManyRequests:
					refused++
				default:
					t.Errorf("a creation of the flood answered HTTP %d", a.status)
				}
			}
			if created > maxActive || created+refused != flood {
				t.Errorf("the flood created %d tasks and was refused %d times; want at most %d created, the rest refused", created, refused, maxActive)
			}
			flooded := created
			// A call refused early (a task counted twice) can be made now.
			c := cs.client()
			for created < maxActive {
				r := callTool(t, c, toolReports, args)
				if r.Status != http.StatusOK || r.Error != nil {
					t.Fatalf("creation %d after the flood: HTTP %d, %v", created+1, r.Status, r.Error)
				}
				created++
			}
			if r, err := c.CallTool(t.Context(), toolReports, args); err != nil || r.Status != http.StatusTooManyRequests {
				t.Errorf("creation past the cap: %v, HTTP %d; want 429", err, statusOf(r))
			}
			created, refused = flooded, flood-flooded
		})
	}
}
