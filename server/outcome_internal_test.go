package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
)

// TestSettle pins the one decision of a request's outcome that both eras'
// responses go through, including the refusals by HTTP status that a
// method's own outcome used to call protocol errors (an initialize refused
// with 429 "Too many sessions" or 503 was reported as protocol_error).
func TestSettle(t *testing.T) {
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	plainErr := invalidParams("Invalid params: x")
	tests := []struct {
		name     string
		outcome  Outcome
		perr     *protocolError
		written  bool
		gone     bool
		detached bool
		want     Outcome
	}{
		{"result", OutcomeToolError, nil, true, false, false, OutcomeToolError},
		{"result, client gone after", OutcomeComplete, nil, true, true, false, OutcomeComplete},
		{"result not written, deadline answered", OutcomeComplete, nil, false, false, false, OutcomeTimeout},
		{"result not written, client gone", OutcomeComplete, nil, false, true, false, OutcomeCanceled},
		{"result not written, detached", OutcomeComplete, nil, false, false, true, OutcomeCanceled},
		{"stream gone", OutcomeProtocolError, errStreamGone, false, false, false, OutcomeCanceled},
		{"busy not written, client gone", OutcomeBusy, errQueueFull, false, true, false, OutcomeCanceled},
		{"deadline", OutcomeProtocolError, errDeadline, true, false, false, OutcomeTimeout},
		{"queue full", OutcomeProtocolError, errQueueFull, true, false, false, OutcomeBusy},
		{"task queue timeout", OutcomeProtocolError, errTaskQueueTimeout, true, false, false, OutcomeBusy},
		{"internal", OutcomeProtocolError, errInternal, true, false, false, OutcomeInternalError},
		{"store unavailable", OutcomeBusy, errStoreUnavailable, true, false, false, OutcomeInternalError},
		{"rate limited", OutcomeProtocolError, rateLimited(time.Second), true, false, false, OutcomeRateLimited},
		{"too many sessions", OutcomeProtocolError, errSessionLimit, true, false, false, OutcomeRateLimited},
		{"sessions full", OutcomeProtocolError, errSessionsFull, true, false, false, OutcomeBusy},
		{"plain error", OutcomeComplete, plainErr, true, false, false, OutcomeProtocolError},
		{"method's internal error kept", OutcomeInternalError, plainErr, true, false, false, OutcomeInternalError},
		{"session status", OutcomeProtocolError, legacyStatus(plainErr), true, false, false, OutcomeProtocolError},
		{"header mismatch", OutcomeProtocolError, headerMismatch("Header mismatch: x"), true, false, false, OutcomeProtocolError},
		{"not found", OutcomeProtocolError, newProtocolError(http.StatusNotFound, mcp.MethodNotFound()), true, false, false, OutcomeProtocolError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			if tt.gone {
				r = r.WithContext(gone)
			}
			c := &call{r: r, detached: tt.detached}
			if diff := cmp.Diff(tt.want, c.settle(tt.outcome, tt.perr, tt.written)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestOutcomeOfSessionRefusals: an initialize the session limits refuse
// is reported like the transport's other refusals (it used to be
// protocol_error, as outcomeOf knew only the server's own errors).
func TestOutcomeOfSessionRefusals(t *testing.T) {
	got := map[string]Outcome{"limit": outcomeOf(errSessionLimit), "full": outcomeOf(errSessionsFull)}
	want := map[string]Outcome{"limit": OutcomeRateLimited, "full": OutcomeBusy}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
