package schedule

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/worker"
)

type reportIn struct {
	Kind string `json:"kind"`
}

type reportOut struct {
	Rows int `json:"rows"`
}

// TestThreeNodesOneTaskPerPeriod has three schedulers, each in front of a
// server of its own over one real store (three API nodes of a fleet),
// create the same periods at once: each period gets exactly one task, and
// every scheduler is handed it.
func TestThreeNodesOneTaskPerPeriod(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) backend.Store
	}{
		{"memory", func(t *testing.T) backend.Store {
			m, err := memory.New(memory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			return m
		}},
		{"sqlite", func(t *testing.T) backend.Store {
			st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "t.db"), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"postgres", func(t *testing.T) backend.Store {
			raw := pgtest.URL(t)
			st, err := postgres.Open(context.Background(), postgres.Options{URL: raw, Schema: pgtest.Schema(t, raw, "twsched_"),
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			st := sc.open(t)
			var scheds []*Scheduler
			for range 3 {
				var set durable.Set
				durable.Add(&set, durable.Tool[reportIn, reportOut]{
					Tool: &mcp.Tool{Name: "reports.nightly"},
					Run:  func(context.Context, *worker.Job, reportIn) (reportOut, error) { return reportOut{}, nil },
				})
				ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "main", Version: "1"})
				if err := set.Serve(ep, st); err != nil {
					t.Fatal(err)
				}
				srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: st, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { srv.Close() })
				s, err := New(srv, []Schedule{{Name: "nightly", Tool: "reports.nightly", Arguments: []byte(`{"kind":"sales"}`),
					Identity: server.Identity{Principal: "scheduler", Tenant: "ops"}, Every: time.Hour}}, Options{})
				if err != nil {
					t.Fatal(err)
				}
				scheds = append(scheds, s)
			}
			start := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
			ids := map[string]bool{}
			for p := range 3 {
				period := start.Add(time.Duration(p) * time.Hour)
				var wg sync.WaitGroup
				for _, s := range scheds {
					wg.Go(func() {
						s.items[0].next = period.Add(time.Hour)
						s.create(s.items[0], period)
					})
				}
				wg.Wait()
				var got []string
				for _, s := range scheds {
					st := s.Statuses()[0]
					if st.LastFailure != "" || st.LastTaskID == "" {
						t.Fatalf("period %d: status %+v", p, st)
					}
					got = append(got, st.LastTaskID)
				}
				if got[0] != got[1] || got[1] != got[2] {
					t.Errorf("period %d: the three nodes got tasks %v, want one", p, got)
				}
				if ids[got[0]] {
					t.Errorf("period %d reused an earlier period's task", p)
				}
				ids[got[0]] = true
			}
		})
	}
}
