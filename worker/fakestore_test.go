package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// fakeStore is a small in-memory Store for the runtime's tests. It honours
// the fencing contract: every write names a Lease and is applied only while
// the job is running under that attempt and its lease has not expired;
// otherwise it returns ErrLeaseLost and changes nothing. Times come from
// package time, so inside a synctest bubble they are the bubble's fake time.
type fakeStore struct {
	events *task.Broadcaster // may be nil

	mu    sync.Mutex
	jobs  map[string]*fakeJob
	order []string
	seq   int
	// anyKindClaims makes that many claims ignore ClaimParams.Kinds, like
	// a buggy store.
	anyKindClaims int
	// heartbeatErr, when set, is returned by every Heartbeat.
	heartbeatErr error
	// claimErr, when set, is returned by every Claim.
	claimErr error
	// Call counters and logs for assertions.
	rescueCalls, cleanupCalls int
	rescues                   []backend.RescueParams
	claims                    []backend.ClaimParams
	heartbeats                int
	writes                    []string // "op" per accepted final write
}

type fakeJob struct {
	id, kind    string
	origin      task.Origin
	state       string // available, running, parked, done
	status      task.Status
	attempt     int64
	failures    int
	interrupted int
	maxAttempts int
	runAt       time.Time
	leaseUntil  time.Time
	responses   mcp.InputResponses
	pending     mcp.InputRequests
	used        map[string]bool
	cancelReq   bool
	result      *mcp.CallToolResult
	rpcErr      *mcp.Error
	message     string
	progress    *task.Progress
	claimTimes  []time.Time
	// reports logs every accepted progress write, with its (fake) time.
	reports []fakeReport
}

// fakeReport is one accepted progress write.
type fakeReport struct {
	at       time.Time
	message  string
	progress *task.Progress
}

func newFakeStore(events *task.Broadcaster) *fakeStore {
	return &fakeStore{events: events, jobs: map[string]*fakeJob{}}
}

func (s *fakeStore) publish(id string) {
	if s.events != nil {
		s.events.Publish(id)
	}
}

// enqueue adds an available job and returns its task ID.
func (s *fakeStore) enqueue(t testing.TB, origin task.Origin, maxAttempts int) string {
	t.Helper()
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("task-%04d", s.seq)
	s.jobs[id] = &fakeJob{
		id: id, kind: origin.Tool(), origin: origin, state: "available", status: task.Working,
		maxAttempts: maxAttempts, runAt: time.Now(), used: map[string]bool{},
	}
	s.order = append(s.order, id)
	s.mu.Unlock()
	s.publish(id)
	return id
}

// job returns a copy of the job's state.
func (s *fakeStore) job(id string) fakeJob {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := *s.jobs[id]
	j.claimTimes = slices.Clone(j.claimTimes)
	j.reports = slices.Clone(j.reports)
	return j
}

// answer accepts a response for an outstanding key; once every outstanding
// request is answered, the job is available again.
func (s *fakeStore) answer(id, key string, raw string) {
	s.mu.Lock()
	j := s.jobs[id]
	if _, ok := j.pending[key]; ok {
		if j.responses == nil {
			j.responses = mcp.InputResponses{}
		}
		j.responses[key] = json.RawMessage(raw)
		delete(j.pending, key)
		if len(j.pending) == 0 && j.state == "parked" {
			j.state, j.status, j.runAt = "available", task.Working, time.Now()
		}
	}
	s.mu.Unlock()
	s.publish(id)
}

// requestCancel records the client's cancel intent.
func (s *fakeStore) requestCancel(id string) {
	s.mu.Lock()
	s.jobs[id].cancelReq = true
	s.mu.Unlock()
	s.publish(id)
}

// expireLease makes the job's current lease end now, as if heartbeats had
// stopped reaching the store.
func (s *fakeStore) expireLease(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[id].leaseUntil = time.Now()
}

// claimElsewhere marks the job running under another worker's claim whose
// lease ends at until.
func (s *fakeStore) claimElsewhere(id string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[id]
	j.state, j.leaseUntil = "running", until
	j.attempt++
}

func (s *fakeStore) setHeartbeatErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeatErr = err
}

func (s *fakeStore) setClaimErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimErr = err
}

func (s *fakeStore) rescueLog() []backend.RescueParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rescues)
}

func (s *fakeStore) claimLog() []backend.ClaimParams {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.claims)
}

func (s *fakeStore) calls() (rescue, cleanup, heartbeats int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rescueCalls, s.cleanupCalls, s.heartbeats
}

func (s *fakeStore) writeLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.writes)
}

// fenced applies fn to the job named by l if l is its live claim.
func (s *fakeStore) fenced(l backend.Lease, op string, fn func(j *fakeJob) error) error {
	s.mu.Lock()
	j, ok := s.jobs[l.TaskID]
	if !ok || j.state != "running" || j.attempt != l.Attempt || !time.Now().Before(j.leaseUntil) {
		s.mu.Unlock()
		return backend.ErrLeaseLost
	}
	if err := fn(j); err != nil {
		s.mu.Unlock()
		return err
	}
	if op != "" {
		s.writes = append(s.writes, op)
	}
	s.mu.Unlock()
	if op != "" {
		s.publish(l.TaskID)
	}
	return nil
}

func (s *fakeStore) Claim(ctx context.Context, p backend.ClaimParams) ([]backend.JobRow, error) {
	if p.Limit < 1 {
		return nil, fmt.Errorf("fake: limit %d", p.Limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimErr != nil {
		return nil, s.claimErr
	}
	s.claims = append(s.claims, p)
	anyKind := s.anyKindClaims > 0
	if anyKind {
		s.anyKindClaims--
	}
	var out []backend.JobRow
	for _, id := range s.order {
		if len(out) == p.Limit {
			break
		}
		j := s.jobs[id]
		if j == nil || j.state != "available" || j.runAt.After(p.Now) {
			continue
		}
		if !anyKind && len(p.Kinds) > 0 && !slices.Contains(p.Kinds, j.kind) {
			continue
		}
		j.state = "running"
		j.attempt++
		j.leaseUntil = p.Now.Add(p.Lease)
		j.claimTimes = append(j.claimTimes, p.Now)
		out = append(out, backend.JobRow{
			Lease:           backend.Lease{TaskID: id, Attempt: j.attempt},
			Kind:            j.kind,
			Origin:          j.origin,
			Failures:        j.failures,
			InterruptedRuns: j.interrupted,
			MaxAttempts:     j.maxAttempts,
			Responses:       maps.Clone(j.responses),
			LeaseExpires:    j.leaseUntil,
			CancelRequested: j.cancelReq,
		})
	}
	return out, nil
}

func (s *fakeStore) Heartbeat(ctx context.Context, l backend.Lease, lease time.Duration) error {
	s.mu.Lock()
	err := s.heartbeatErr
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.fenced(l, "", func(j *fakeJob) error {
		s.heartbeats++
		j.leaseUntil = time.Now().Add(lease)
		return nil
	})
}

func (s *fakeStore) RequestInput(ctx context.Context, l backend.Lease, reqs mcp.InputRequests, message string) error {
	return s.fenced(l, "RequestInput", func(j *fakeJob) error {
		for k := range reqs {
			if j.used[k] {
				return backend.ErrKeyReused
			}
		}
		for k := range reqs {
			j.used[k] = true
		}
		j.state, j.status, j.pending, j.message = "parked", task.InputRequired, maps.Clone(reqs), message
		return nil
	})
}

func (s *fakeStore) Complete(ctx context.Context, l backend.Lease, res *mcp.CallToolResult, message string) error {
	return s.fenced(l, "Complete", func(j *fakeJob) error {
		j.state, j.status, j.result, j.message = "done", task.Completed, res, message
		return nil
	})
}

func (s *fakeStore) Fail(ctx context.Context, l backend.Lease, rpcErr *mcp.Error, message string) error {
	return s.fenced(l, "Fail", func(j *fakeJob) error {
		j.state, j.status, j.rpcErr, j.message = "done", task.Failed, rpcErr, message
		return nil
	})
}

func (s *fakeStore) Cancel(ctx context.Context, l backend.Lease, message string) error {
	return s.fenced(l, "Cancel", func(j *fakeJob) error {
		j.state, j.status, j.message = "done", task.Cancelled, message
		return nil
	})
}

func (s *fakeStore) Retry(ctx context.Context, l backend.Lease, runAt time.Time, message string) error {
	return s.fenced(l, "Retry", func(j *fakeJob) error {
		j.state, j.failures, j.runAt, j.message = "available", j.failures+1, runAt, message
		return nil
	})
}

func (s *fakeStore) Release(ctx context.Context, l backend.Lease) error {
	return s.fenced(l, "Release", func(j *fakeJob) error {
		j.state = "available"
		return nil
	})
}

func (s *fakeStore) CancelRequested(ctx context.Context, taskID string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[taskID]
	if !ok {
		return false, task.ErrNotFound
	}
	return j.cancelReq, nil
}

func (s *fakeStore) RescueExpired(ctx context.Context, p backend.RescueParams) (int, error) {
	s.mu.Lock()
	s.rescueCalls++
	s.rescues = append(s.rescues, p)
	var rescued []string
	for _, id := range s.order {
		if len(rescued) == p.Limit {
			break
		}
		j := s.jobs[id]
		if j == nil || j.state != "running" || p.Now.Before(j.leaseUntil) {
			continue
		}
		j.interrupted++
		if j.interrupted >= p.MaxInterruptedRuns {
			j.state, j.status, j.rpcErr = "done", task.Failed, internalError(msgRepeatedFailed)
		} else {
			j.state = "available"
		}
		rescued = append(rescued, id)
	}
	s.mu.Unlock()
	for _, id := range rescued {
		s.publish(id)
	}
	return len(rescued), nil
}

func (s *fakeStore) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanupCalls++
	return 0, nil
}

// ReportProgress implements ProgressReporter, fenced like every write.
func (s *fakeStore) ReportProgress(ctx context.Context, l backend.Lease, message string, p *task.Progress) error {
	return s.fenced(l, "ReportProgress", func(j *fakeJob) error {
		j.message, j.progress = message, p
		j.reports = append(j.reports, fakeReport{at: time.Now(), message: message, progress: p})
		return nil
	})
}

var (
	_ backend.JobStore         = (*fakeStore)(nil)
	_ backend.ProgressReporter = (*fakeStore)(nil)
)
