package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
)

// TestMaxStoredBoundsDurableSessions opens sessions on a durable store
// (SQLite, as `taskwire serve` uses by default) with large capabilities:
// anonymous callers, whom no per-principal limit distinguishes, and named
// ones alike stop at SessionOptions.MaxStored with 503, and the store
// holds no more rows than that.
func TestMaxStoredBoundsDurableSessions(t *testing.T) {
	tests := []struct {
		name string
		auth func(i int) string // Authorization of the i-th initialize
	}{
		{"anonymous", func(int) string { return "" }},
		{"a principal each", func(i int) string { return "Bearer p" + strings.Repeat("x", i) }},
	}
	const maxStored, tries = 8, 20
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "s.db"), EventPoll: -1, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			srv := newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) {
				o.Sessions = &server.SessionOptions{Store: st.Sessions(), MaxSessions: 100, MaxPerPrincipal: 5, MaxStored: maxStored}
			})
			base := newLegacyRig(t, srv)
			caps := `{"experimental":{"pad":{"x":"` + strings.Repeat("a", 60<<10) + `"}}}`
			got := map[int]int{}
			for i := range tries {
				c := base.clone()
				c.auth = tt.auth(i)
				got[c.initialize("2025-11-25", caps).status]++
			}
			want := map[int]int{http.StatusOK: maxStored, http.StatusServiceUnavailable: tries - maxStored}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("initialize statuses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMaxStoredValidation checks the option at construction.
func TestMaxStoredValidation(t *testing.T) {
	tests := []struct {
		name    string
		opts    server.SessionOptions
		wantErr string
	}{
		{"negative", server.SessionOptions{MaxStored: -1}, "SessionOptions.MaxStored must not be negative"},
		{"below MaxPerPrincipal", server.SessionOptions{MaxPerPrincipal: 10, MaxStored: 5}, "MaxPerPrincipal (10) exceeds MaxStored (5)"},
		{"default", server.SessionOptions{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "e", Version: "1"})
			opts := tt.opts
			_, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Sessions: &opts})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("New = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}
