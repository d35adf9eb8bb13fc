package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/gateway"
)

// TestValidateNamesEveryField: Validate reports every problem, one line
// each, naming its field.
func TestValidateNamesEveryField(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts gateway.Options
		want []string
	}{
		{"sound", gateway.Options{Upstream: "http://127.0.0.1:9/mcp", TaskTools: []string{"slow.*"}}, nil},
		{"no upstream", gateway.Options{}, []string{"Upstream or UpstreamCommand is required"}},
		{"scheme", gateway.Options{Upstream: "ftp://h/mcp"}, []string{`Upstream: scheme "ftp" is not http or https`}},
		{"credentials in URL", gateway.Options{Upstream: "http://u:p@h/mcp"},
			[]string{"Upstream: credentials in the URL are refused; send them with UpstreamHeaders"}},
		{"a command", gateway.Options{UpstreamCommand: []string{"node", "server.js"}, UpstreamEnv: []string{"A=1"}}, nil},
		{"both upstreams", gateway.Options{Upstream: "http://h/mcp", UpstreamCommand: []string{"node"}},
			[]string{"Upstream and UpstreamCommand exclude each other: give one"}},
		{"HTTP with command fields", gateway.Options{Upstream: "http://h/mcp", UpstreamDir: "/srv"},
			[]string{"UpstreamEnv and UpstreamDir apply to UpstreamCommand, not to an HTTP Upstream"}},
		{"command with HTTP fields", gateway.Options{
			UpstreamCommand:  []string{"", "a\x00b"},
			UpstreamHeaders:  http.Header{"X-Key": {"k"}},
			Transport:        http.DefaultTransport,
			ProtocolVersions: []string{"2026-07-28", "2025-03-26"},
		}, []string{
			"UpstreamCommand: the program (its first element) is empty",
			"UpstreamCommand: an argument holds a NUL byte",
			"UpstreamHeaders apply to an HTTP Upstream, not to UpstreamCommand",
			"Transport applies to an HTTP Upstream, not to UpstreamCommand",
			`ProtocolVersions: "2025-03-26" is not a revision a stdio upstream speaks (2026-07-28, 2025-11-25, 2025-06-18)`,
		}},
		{"everything at once", gateway.Options{
			Upstream:           "http://h/mcp",
			UpstreamHeaders:    http.Header{"Mcp-Session-Id": {"x"}, "X-Key": {"a\nb"}},
			TaskTools:          []string{"[", ""},
			RetryTools:         []string{"a[b"},
			CallTimeout:        -time.Second,
			TaskCallTimeout:    48 * time.Hour,
			MaxInFlight:        -1,
			MaxAttempts:        -1,
			MaxHeldCalls:       gateway.DefaultMaxInFlight + 1,
			HoldTimeout:        time.Hour,
			MaxResumedSessions: gateway.MaxMaxResumedSessions + 1,
		}, []string{
			"UpstreamHeaders: Mcp-Session-Id is set by the gateway's client and cannot be configured",
			"UpstreamHeaders: the value of X-Key holds a control character",
			`TaskTools: pattern "[": syntax error in pattern`,
			"TaskTools: an empty pattern",
			`RetryTools: pattern "a[b": syntax error in pattern`,
			"CallTimeout must be between 0 (the default) and 10m0s, not -1s",
			"TaskCallTimeout must be between 0 (the default) and 24h0m0s, not 48h0m0s",
			"MaxInFlight must be between 0 (the default) and 10000, not -1",
			"MaxAttempts must not be negative",
			"MaxHeldCalls must be between 0 (the default) and MaxInFlight, not 65",
			"HoldTimeout must be between 0 (the default) and 30m0s, not 1h0m0s",
			"MaxResumedSessions must be between 0 (the default) and 1024, not 1025",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			if err := tc.opts.Validate(); err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			// Header order follows the map's: compare as sets.
			if diff := cmp.Diff(tc.want, got, cmpSorted); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// TestNewFailsOnUnreachableUpstream: New checks the options before it
// sends anything, and reports an upstream that does not answer.
func TestNewFailsOnUnreachableUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := gateway.New(ctx, gateway.Options{Upstream: "http://127.0.0.1:9/mcp", TaskTools: []string{"["}}); err == nil ||
		!strings.Contains(err.Error(), "TaskTools") {
		t.Errorf("New with a bad pattern: %v, want the TaskTools problem", err)
	}
	up := newUpstream(t)
	url := up.url
	up.srvClose()
	_, err := gateway.New(ctx, gateway.Options{Upstream: url})
	var ce *client.ConnectionError
	if !errors.As(err, &ce) {
		t.Errorf("New against a closed upstream: %v, want a *client.ConnectionError", err)
	}
}
