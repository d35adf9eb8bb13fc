package worker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// storeWrap wraps the JobStore of the in-memory backend (store/memory) for
// the runtime's tests: it records the calls the tests assert on and injects
// the faults of a failing or buggy store. It exposes JobStore,
// ProgressReporter and Checkpointer only, so the runtime completes one job at a time (see
// batch_test.go for batched completions) and prunes nothing.
type storeWrap struct {
	backend.JobStore
	now func() time.Time

	mu sync.Mutex
	// heartbeatErr and claimErr, when set, are returned by every Heartbeat
	// and Claim instead of calling the store.
	heartbeatErr, claimErr error
	// requestInputErr, when set, is returned by RequestInput instead of
	// calling the store.
	requestInputErr error
	// anyKindClaims makes that many claims ignore ClaimParams.Kinds, like
	// a buggy store.
	anyKindClaims int

	claims     []backend.ClaimParams
	rescues    []backend.RescueParams
	cleanups   int
	heartbeats int      // accepted
	writes     []string // accepted writes other than heartbeats, by method
	claimTimes map[string][]time.Time
	reports    map[string][]report // accepted progress writes
}

// report is one accepted progress write, at the clock's time.
type report struct {
	at       time.Time
	message  string
	progress *task.Progress
}

func newStoreWrap(jobs backend.JobStore, now func() time.Time) *storeWrap {
	return &storeWrap{JobStore: jobs, now: now, claimTimes: map[string][]time.Time{}, reports: map[string][]report{}}
}

func (s *storeWrap) setHeartbeatErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeatErr = err
}

func (s *storeWrap) setClaimErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimErr = err
}

func (s *storeWrap) setRequestInputErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requestInputErr = err
}

func (s *storeWrap) rescueLog() []backend.RescueParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rescues)
}

func (s *storeWrap) claimLog() []backend.ClaimParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.claims)
}

func (s *storeWrap) calls() (rescue, cleanup, heartbeats int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rescues), s.cleanups, s.heartbeats
}

func (s *storeWrap) writeLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.writes)
}

// accepted logs a write that succeeded.
func (s *storeWrap) accepted(op string, err error) error {
	if err == nil {
		s.mu.Lock()
		s.writes = append(s.writes, op)
		s.mu.Unlock()
	}
	return err
}

func (s *storeWrap) Claim(ctx context.Context, p backend.ClaimParams) ([]backend.JobRow, error) {
	s.mu.Lock()
	if err := s.claimErr; err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.claims = append(s.claims, p)
	asked := p
	if s.anyKindClaims > 0 {
		s.anyKindClaims--
		asked.Kinds = nil
	}
	s.mu.Unlock()
	jobs, err := s.JobStore.Claim(ctx, asked)
	s.mu.Lock()
	for _, j := range jobs {
		s.claimTimes[j.TaskID] = append(s.claimTimes[j.TaskID], p.Now)
	}
	s.mu.Unlock()
	return jobs, err
}

func (s *storeWrap) Heartbeat(ctx context.Context, l backend.Lease, lease time.Duration) error {
	s.mu.Lock()
	err := s.heartbeatErr
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.JobStore.Heartbeat(ctx, l, lease); err != nil {
		return err
	}
	s.mu.Lock()
	s.heartbeats++
	s.mu.Unlock()
	return nil
}

func (s *storeWrap) RequestInput(ctx context.Context, l backend.Lease, reqs mcp.InputRequests, message string) error {
	s.mu.Lock()
	err := s.requestInputErr
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.accepted("RequestInput", s.JobStore.RequestInput(ctx, l, reqs, message))
}

func (s *storeWrap) Complete(ctx context.Context, l backend.Lease, res *mcp.CallToolResult, message string) error {
	return s.accepted("Complete", s.JobStore.Complete(ctx, l, res, message))
}

func (s *storeWrap) Fail(ctx context.Context, l backend.Lease, rpcErr *mcp.Error, message string, c backend.FailureCategory) error {
	return s.accepted("Fail", s.JobStore.Fail(ctx, l, rpcErr, message, c))
}

func (s *storeWrap) Cancel(ctx context.Context, l backend.Lease, message string) error {
	return s.accepted("Cancel", s.JobStore.Cancel(ctx, l, message))
}

func (s *storeWrap) Retry(ctx context.Context, l backend.Lease, runAt time.Time, message string, c backend.FailureCategory) error {
	return s.accepted("Retry", s.JobStore.Retry(ctx, l, runAt, message, c))
}

func (s *storeWrap) Release(ctx context.Context, l backend.Lease) error {
	return s.accepted("Release", s.JobStore.Release(ctx, l))
}

func (s *storeWrap) RescueExpired(ctx context.Context, p backend.RescueParams) (int, error) {
	s.mu.Lock()
	s.rescues = append(s.rescues, p)
	s.mu.Unlock()
	return s.JobStore.RescueExpired(ctx, p)
}

func (s *storeWrap) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	s.mu.Lock()
	s.cleanups++
	s.mu.Unlock()
	return s.JobStore.DeleteExpired(ctx, now, limit)
}

func (s *storeWrap) ReportProgress(ctx context.Context, l backend.Lease, message string, p *task.Progress) error {
	at := s.now()
	err := s.accepted("ReportProgress", s.JobStore.(backend.ProgressReporter).ReportProgress(ctx, l, message, p))
	if err == nil {
		s.mu.Lock()
		s.reports[l.TaskID] = append(s.reports[l.TaskID], report{at: at, message: message, progress: p})
		s.mu.Unlock()
	}
	return err
}

var _ backend.ProgressReporter = (*storeWrap)(nil)

func (s *storeWrap) SaveCheckpoints(ctx context.Context, items []backend.CheckpointWrite) ([]bool, error) {
	lost, err := s.JobStore.(backend.Checkpointer).SaveCheckpoints(ctx, items)
	if err == nil && !slices.Contains(lost, false) {
		return lost, nil // nothing was written
	}
	return lost, s.accepted("SaveCheckpoints", err)
}

var _ backend.Checkpointer = (*storeWrap)(nil)

// queuesWrap is a storeWrap whose store claims several queues at once
// (backend.QueuesClaimer). It logs each queue of a ClaimQueues call as a
// claim of that queue (claimLog), and the calls (queueClaimLog).
type queuesWrap struct {
	*storeWrap
	qc backend.QueuesClaimer

	multi [][]backend.QueueClaim // guarded by storeWrap.mu
}

// claimQueuesToo makes h's runtime claim through a queuesWrap of its
// store, which it returns. Call it before h.start.
func (h *harness) claimQueuesToo(t *testing.T) *queuesWrap {
	t.Helper()
	qc, ok := h.mem.Jobs().(backend.QueuesClaimer)
	if !ok {
		t.Fatal("the memory store is no QueuesClaimer")
	}
	w := &queuesWrap{storeWrap: h.store, qc: qc}
	h.rt.opts.Store = w
	return w
}

func (w *queuesWrap) ClaimQueues(ctx context.Context, p backend.ClaimParams, qs []backend.QueueClaim) ([][]backend.JobRow, error) {
	w.mu.Lock()
	if err := w.claimErr; err != nil {
		w.mu.Unlock()
		return nil, err
	}
	w.multi = append(w.multi, slices.Clone(qs))
	for _, q := range qs {
		c := p
		c.Queue, c.Kinds, c.Limit = q.Queue, q.Kinds, q.Limit
		w.claims = append(w.claims, c)
	}
	w.mu.Unlock()
	jobs, err := w.qc.ClaimQueues(ctx, p, qs)
	w.mu.Lock()
	for _, js := range jobs {
		for _, j := range js {
			w.claimTimes[j.TaskID] = append(w.claimTimes[j.TaskID], p.Now)
		}
	}
	w.mu.Unlock()
	return jobs, err
}

// queueClaimLog returns the queues of each ClaimQueues call.
func (w *queuesWrap) queueClaimLog() [][]backend.QueueClaim {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.multi)
}
