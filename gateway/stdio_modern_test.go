package gateway_test

import (
	"context"
	"testing"

	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
)

// stdioEras runs f for each era the gateway may speak to a stdio upstream
// that speaks both (this test binary): a 2025 session (versions nil:
// stdioOptions pins the 2025 revisions), and 2026-07-28, found by
// server/discover with the default versions (an empty, non-nil list).
func stdioEras(t *testing.T, f func(t *testing.T, versions []string)) {
	for _, era := range []struct {
		name     string
		versions []string
	}{
		{mcp.ProtocolVersion20251125, nil},
		{mcp.LatestProtocolVersion, []string{}},
	} {
		t.Run("upstream "+era.name, func(t *testing.T) { f(t, era.versions) })
	}
}

// TestStdioUpstreamEra: with the default versions, an upstream command
// that answers server/discover as a 2026-07-28 server is spoken to in
// 2026-07-28 (no initialize); pinned to the 2025 revisions, or given a
// 2025-only server, the gateway opens a 2025 session.
func TestStdioUpstreamEra(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions []string
		want     string
	}{
		{"defaults", []string{}, mcp.LatestProtocolVersion},
		{"2026-07-28 first", []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125}, mcp.LatestProtocolVersion},
		{"2025 pinned", nil, mcp.ProtocolVersion20251125},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, _ := stdioOptions(t, gateway.Options{ProtocolVersions: tc.versions})
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			g, err := gateway.New(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if got := g.ProtocolVersion(); got != tc.want {
				t.Errorf("ProtocolVersion() = %q, want %q", got, tc.want)
			}
		})
	}
}
