// Package storetest is the behavioural suite every task store must pass:
// the durable stores (store/sqlite, store/postgres) and the in-memory
// backend (store/memory) alike. A backend's tests call Run with a
// constructor:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, now func() time.Time) backend.Store {
//			s, err := mystore.Open(..., now)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The constructor must return an empty store that reads time from now only,
// and release it in t.Cleanup. Tests call it once per subtest (and once per
// random sequence of the model test), so it should be cheap.
//
// The suite pins the contract of task.Manager, backend.JobStore and
// backend.Enqueuer beyond their doc comments, where backends must agree:
//
//   - Claim takes due jobs of one queue (ClaimParams.Queue, "" meaning
//     backend.DefaultQueue) ordered by priority (1 first), then run-at
//     time, then creation time, then task ID; a job of a queue no claim
//     names is never claimed; a claim of several queues at once
//     (backend.QueuesClaimer, optional) takes from each what a Claim of it
//     would; RescueExpired by lease expiry, then task ID; DeleteExpired by
//     expiry, then task ID. A lease expires at now+lease: writes need
//     now < expiry, rescue needs expiry <= now. A task expires at
//     creation+TTL: it is gone when now >= expiry.
//   - A job awaiting input is claimable once cancellation was requested.
//   - A job keeps its run-at time when it is rescued, released, or parked
//     for input and answered: it keeps its place in the claim order.
//   - Failures count Retry calls, interrupted runs count rescued leases,
//     apart; the failure that reaches MaxAttempts, and the interrupted run
//     that reaches RescueParams.MaxInterruptedRuns, fail the task with
//     {"code":-32603,"message":"The task failed after repeated attempts."}.
//     MaxAttempts defaults to backend.DefaultMaxAttempts.
//   - Claims skip jobs of expired tasks; fenced writes ignore TTL until
//     the task is deleted.
//   - ReportProgress changes the message and progress count of a task whose
//     job runs under the lease, never its status; terminal writes and
//     retries keep the count, and a batched completion may set it.
//   - SaveCheckpoints (backend.Checkpointer, which the suite requires)
//     writes under the lease, refuses oversized checkpoints before
//     writing, changes nothing a client sees, and every later claim of
//     the job carries the last checkpoint and the task's progress count.
//   - lastUpdatedAt is the time of the last change a client can see, and
//     never goes backwards.
//   - ListTasks lists what FindTask finds, unexpired, newest first, ties
//     by descending ID, in pages of at most 100, with keyset cursors bound
//     to the caller (see list.go). RunLister runs these cases alone, for
//     managers that are not a backend.Store.
//
// Run the suite with -race. -short shrinks the model test and the hammer.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// Run runs the suite against backends made by open. open receives the test
// clock; the store must use it for every time it reads itself (fenced
// writes, updates, expiry), while the suite passes the same clock's time to
// Claim, RescueExpired and DeleteExpired.
func Run(t *testing.T, open func(t *testing.T, now func() time.Time) backend.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open opener)
	}{
		{"Publisher", testPublisher},
		{"Fencing", testFencing},
		{"Idempotency", testIdempotency},
		{"Authorization", testAuthorization},
		{"InputRounds", testInputRounds},
		{"OriginBytes", testOriginBytes},
		{"Events", testEvents},
		{"TTL", testTTL},
		{"Prune", testPrune},
		{"PruneMilliseconds", testPruneMilliseconds},
		{"Rescue", testRescue},
		{"Retry", testRetry},
		{"QueueOrder", testQueueOrder},
		{"Queues", testQueues},
		{"ClaimQueues", testClaimQueues},
		{"QueueOptionsRange", testQueueOptionsRange},
		{"InterruptedRuns", testInterruptedRuns},
		{"Liveness", testLiveness},
		{"RetryUnavailable", testRetryUnavailable},
		{"CancelWhileAwaitingInput", testCancelAwaitingInput},
		{"CompleteBatch", testCompleteBatch},
		{"CompleteBatchOneJobTwice", testCompleteBatchOneJobTwice},
		{"Progress", testProgress},
		{"CompleteBatchInvalidProgress", testCompleteBatchInvalidProgress},
		{"Checkpoint", testCheckpoint},
		{"CheckpointBatch", testCheckpointBatch},
		{"CompleteWithCheckpoint", testCompleteWithCheckpoint},
		{"TraceContext", testTraceContext},
		{"EnqueueBatch", testEnqueueBatch},
		{"MaxAttemptsRange", testMaxAttemptsRange},
		{"Text", testText},
		{"CountActive", testCountActive},
		{"FormAnswers", testFormAnswers},
		{"List", testList},
		{"Model", testModel},
		{"Hammer", testHammer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, func(t *testing.T) (backend.Store, *Clock) {
				c := NewClock(Epoch)
				return open(t, c.Now), c
			})
		})
	}
}

// opener makes a fresh backend and its clock.
type opener func(t *testing.T) (backend.Store, *Clock)

// Epoch is the time test clocks start at.
var Epoch = time.UnixMilli(1_800_000_000_000).UTC()

// Clock is a manual clock safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Fixture values.
const (
	endpointA = "ep-a"
	endpointB = "ep-b"
	tenantA   = "tenant-a"
	tenantB   = "tenant-b"
	toolA     = "tool-a"
	toolB     = "tool-b"
	lease     = 10 * time.Second
)

var allInputKinds = []string{task.InputElicitationForm, task.InputElicitationURL, task.InputSampling, task.InputRoots}

// newOrigin builds an origin for endpoint and tool with raw arguments.
func newOrigin(t testing.TB, endpoint, tool, args string) task.Origin {
	t.Helper()
	o, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion: "2026-07-28", Endpoint: endpoint, Operation: "tools/call", Tool: tool,
		Arguments: json.RawMessage(args), InputKinds: allInputKinds,
	})
	if err != nil {
		t.Fatalf("origin: %v", err)
	}
	return o
}

// creation returns a creation context binding a task to endpoint and tenant.
func creation(t testing.TB, endpoint, tenant, tool, args string) *task.CreationContext {
	return &task.CreationContext{
		Request: task.RequestContext{Endpoint: endpoint, Tenant: tenant, Principal: "user-" + tenant, ProtocolVersion: "2026-07-28"},
		Origin:  newOrigin(t, endpoint, tool, args),
	}
}

// rc names a task as seen by a request on endpoint for tenant.
func rc(id, endpoint, tenant string) task.RequestContext {
	return task.RequestContext{TaskID: id, Endpoint: endpoint, Tenant: tenant, Principal: "user-" + tenant}
}

// enqueue creates a task on (endpointA, tenantA, toolA) and fails the test
// on error.
func enqueue(t testing.TB, b backend.Store, opts backend.EnqueueOptions) task.Task {
	t.Helper()
	tk, err := b.Enqueue(context.Background(), creation(t, endpointA, tenantA, toolA, `{"n":1}`), opts)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return tk
}

// find returns the task as (endpointA, tenantA) sees it; found false when it
// is not visible.
func find(t testing.TB, b backend.Store, id string) (task.Task, bool) {
	t.Helper()
	tk, ok, err := b.FindTask(context.Background(), rc(id, endpointA, tenantA))
	if err != nil {
		t.Fatalf("FindTask: %v", err)
	}
	return tk, ok
}

// mustFind is find that fails the test when the task is not visible.
func mustFind(t testing.TB, b backend.Store, id string) task.Task {
	t.Helper()
	tk, ok := find(t, b, id)
	if !ok {
		t.Fatalf("FindTask(%s): not found", id)
	}
	return tk
}

// claim claims up to limit jobs at the clock's time.
func claim(t testing.TB, b backend.Store, c *Clock, limit int) []backend.JobRow {
	t.Helper()
	jobs, err := b.Jobs().Claim(context.Background(), backend.ClaimParams{Worker: "w", Limit: limit, Lease: lease, Now: c.Now()})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return jobs
}

// claimOne claims exactly the job of task id.
func claimOne(t testing.TB, b backend.Store, c *Clock, id string) backend.JobRow {
	t.Helper()
	jobs := claim(t, b, c, 1)
	if len(jobs) != 1 || jobs[0].TaskID != id {
		t.Fatalf("Claim: got %d jobs, want the job of %s", len(jobs), id)
	}
	return jobs[0]
}

// Input request and response fixtures, one per union variant.
var (
	reqElicit  = mcp.NewElicitFormRequest("Which colour?", json.RawMessage(`{"type":"object","properties":{"c":{"type":"string"}}}`))
	reqURL     = mcp.NewElicitURLRequest("Sign in", "https://example.com/consent")
	reqSample  = &mcp.InputRequest{Method: mcp.MethodSamplingCreateMessage, Params: json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}`)}
	reqRoots   = &mcp.InputRequest{Method: mcp.MethodRootsList}
	respElicit = json.RawMessage(`{"action":"accept","content":{"c":"red"}}`)
	respSample = json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hello"},"model":"m1"}`)
	respRoots  = json.RawMessage(`{"roots":[{"uri":"file:///tmp"}]}`)
)

// answerFor returns a response of the right variant for a request method.
func answerFor(method string) json.RawMessage {
	switch method {
	case mcp.MethodSamplingCreateMessage:
		return respSample
	case mcp.MethodRootsList:
		return respRoots
	}
	return respElicit
}

// wrongAnswerFor returns a response of another variant than method's.
func wrongAnswerFor(method string) json.RawMessage {
	switch method {
	case mcp.MethodSamplingCreateMessage:
		return respRoots
	case mcp.MethodRootsList:
		return respElicit
	}
	return respSample
}

var textResult = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}

var toolError = mcp.NewError(mcp.CodeInternalError, "The tool failed.")

// exhausted is the error of a task whose job used its attempts.
var exhausted = backend.ExhaustedError()

// errClass names the class of a store error for comparisons.
func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, backend.ErrLeaseLost):
		return "ErrLeaseLost"
	case errors.Is(err, backend.ErrKeyReused):
		return "ErrKeyReused"
	case errors.Is(err, task.ErrNotFound):
		return "ErrNotFound"
	case errors.Is(err, backend.ErrIdempotencyConflict):
		return "ErrIdempotencyConflict"
	}
	return "other: " + err.Error()
}

// wantErr fails the test unless err is of class want.
func wantErr(t testing.TB, what string, err error, want string) {
	t.Helper()
	if got := errClass(err); got != want {
		t.Fatalf("%s: got %s, want %s", what, got, want)
	}
}

// compactJSON returns raw without insignificant white space.
func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

// reporter returns the ProgressReporter of b's JobStore. The suite requires
// one: it panics when b.Jobs() does not implement it.
func reporter(b backend.Store) backend.ProgressReporter {
	return b.Jobs().(backend.ProgressReporter)
}
