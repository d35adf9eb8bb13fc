package server

import (
	"context"
	"time"
)

// Outcome classifies how an admitted request ended. The set is closed, so it
// is safe as a metric label.
type Outcome string

// Outcomes of admitted requests.
const (
	OutcomeComplete      Outcome = "complete"       // a result with resultType "complete"
	OutcomeToolError     Outcome = "tool_error"     // a tool result with isError true
	OutcomeInputRequired Outcome = "input_required" // an MRTR input_required result
	OutcomeTask          Outcome = "task"           // a task handle (resultType "task")
	OutcomeProtocolError Outcome = "protocol_error" // a JSON-RPC error response
	OutcomeRateLimited   Outcome = "rate_limited"   // HTTP 429
	OutcomeBusy          Outcome = "busy"           // HTTP 503, handler queue full
	OutcomeTimeout       Outcome = "timeout"        // HTTP 504, handler deadline
	OutcomeInternalError Outcome = "internal_error" // fixed -32603 contract failure
	OutcomeCanceled      Outcome = "canceled"       // the client went away
)

// RequestInfo names an admitted request with bounded values only: the
// endpoint's configured name and a method of the protocol. Method is
// "unknown" for anything else.
type RequestInfo struct {
	Endpoint string
	Method   string
}

// Observer is told of the lifecycle of every admitted request: exactly one
// RequestStarted, after admission, and exactly one RequestFinished, after the
// response is written or abandoned. Calls must return quickly; they run on the
// request's goroutine.
type Observer interface {
	RequestStarted(ctx context.Context, info RequestInfo)
	RequestFinished(ctx context.Context, info RequestInfo, outcome Outcome, elapsed time.Duration)
}

// Metrics receives counters for every request, admitted or not, with bounded
// labels. Rejections before admission (bad headers, versions, origins,
// admission refusals) are reported with the HTTP status they were sent with.
// Implementations must be safe for concurrent use and must not block.
type Metrics interface {
	RequestFinished(info RequestInfo, outcome Outcome, elapsed time.Duration)
	RequestRejected(endpoint string, status int)
}

// knownMethods bounds the method label.
var knownMethods = map[string]bool{
	"server/discover": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true,
	"subscriptions/listen": true, "tasks/get": true, "tasks/update": true, "tasks/cancel": true,
	// 2025-era methods of legacy sessions.
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true, "tasks/list": true, "tasks/result": true,
}

// extensionMethods are the methods of extensions an endpoint may add
// (AddExtension) that have their own label; others are "unknown".
var extensionMethods = map[string]bool{"skills/list": true, "skills/get": true, "resources/directory/read": true}

func methodLabel(m string) string {
	if knownMethods[m] || extensionMethods[m] {
		return m
	}
	return "unknown"
}

type nopObserver struct{}

func (nopObserver) RequestStarted(context.Context, RequestInfo)                          {}
func (nopObserver) RequestFinished(context.Context, RequestInfo, Outcome, time.Duration) {}

type nopMetrics struct{}

func (nopMetrics) RequestFinished(RequestInfo, Outcome, time.Duration) {}
func (nopMetrics) RequestRejected(string, int)                         {}
