package storetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// The model test applies random operation sequences to a backend and to
// refModel, a plain in-memory statement of the contract, and compares the
// results and everything observable after every step.

// Job states of the model, named as the SQL stores name them.
const (
	jobAvailable = "available"
	jobRunning   = "running"
	jobAwaiting  = "awaiting_input"
	jobDone      = "done"
)

// mTask is the model of one task and its job.
type mTask struct {
	id, endpoint, tenant, kind string
	idemKey, value             string // value: the modelArgs label of the arguments
	queue                      string // never "": the default is spelled out
	priority                   int    // 1..4

	status      task.Status
	message     string
	outstanding map[string]string // key → method
	used        map[string]bool
	responses   map[string]string // key → compact JSON
	hasResult   bool
	errExhaust  bool // failed with the exhausted error (else the tool error)
	cancel      bool
	progress    *task.Progress // last reported count
	checkpoint  string         // last saved checkpoint; "": none
	createdMs   int64
	expiresMs   int64 // 0: never
	deleted     bool

	state       string
	attempt     int64
	failures    int
	interrupted int
	inputRounds int
	maxAttempts int
	// firstFailureMs is the time of the first Retry; 0: none.
	firstFailureMs int64
	runAtMs        int64
	leaseMs        int64
	instance       string // the instance of the running claim; "": none

	lastSeen time.Time // last observed lastUpdatedAt
	lastView string    // last observed client view
}

// outcomeOf reduces a log line to its operation and result class, for the
// coverage summary.
func outcomeOf(line string) string {
	_, rest, _ := strings.Cut(line, ": ")
	op, _, _ := strings.Cut(rest, " ")
	op = strings.TrimSuffix(op, ":")
	_, res, ok := strings.Cut(rest, " → ")
	switch {
	case !ok && strings.HasSuffix(rest, ": no lease"), !ok && strings.HasSuffix(rest, ": no task"):
		return op + "/" + rest[strings.LastIndex(rest, ": ")+2:]
	case !ok:
		return op
	case op == "create" && res != "conflict" && !strings.HasPrefix(res, "existing"):
		res = "new"
	case strings.HasPrefix(res, "accepted 0"), res == "0", strings.HasPrefix(res, "0 jobs"):
		res = "none"
	case strings.HasPrefix(res, "existing"), strings.HasPrefix(res, "accepted"):
		res, _, _ = strings.Cut(res, " ")
	case op == "claim" || op == "rescue" || op == "delete-expired":
		res = "some"
	}
	return op + "/" + res
}

// short abbreviates a task ID for the operation log.
func short(id string) string { return id[:min(len(id), 8)] }

func (m *mTask) expired(nowMs int64) bool { return m.expiresMs != 0 && nowMs >= m.expiresMs }

func (m *mTask) live(l backend.Lease, nowMs int64) bool {
	return !m.deleted && m.state == jobRunning && m.attempt == l.Attempt && m.leaseMs > nowMs
}

// refModel is the reference model of a store.
type refModel struct {
	tasks []*mTask
	byID  map[string]*mTask
}

func (r *refModel) visible(id, endpoint, tenant string, nowMs int64) *mTask {
	m := r.byID[id]
	if m == nil || m.deleted || m.expired(nowMs) || m.endpoint != endpoint || m.tenant != tenant {
		return nil
	}
	return m
}

// terminate ends a task; the job is done.
func (m *mTask) terminate(status task.Status, message string) {
	m.status, m.message, m.outstanding = status, message, nil
	m.state, m.leaseMs = jobDone, 0
}

// fail counts a failure of the running job: the task fails when the job
// used its attempts, else the job is available at runAt.
func (m *mTask) fail(nowMs, runAtMs int64, message string, setMessage, unavailable bool) {
	m.failures++
	if m.firstFailureMs == 0 {
		m.firstFailureMs = nowMs
	}
	if m.failures >= m.maxAttempts && !unavailable {
		m.terminate(task.Failed, "")
		m.errExhaust = true
		return
	}
	m.state, m.runAtMs, m.leaseMs = jobAvailable, runAtMs, 0
	if setMessage {
		m.message = message
	}
}

// sequence is one random run against a fresh backend.
type sequence struct {
	t      *testing.T
	b      backend.Store
	c      *Clock
	rng    *rand.Rand
	model  refModel
	leases []backend.Lease
	keyN   int
	log    []string
	// holds are two live instance holds (nil when the store holds none
	// here); dead are the instances of the holds closed.
	holds []backend.InstanceHold
	dead  map[string]bool
}

func testModel(t *testing.T, open opener) {
	seqs, ops := 200, 50
	if testing.Short() {
		seqs = 40
	}
	if raceEnabled {
		seqs /= 4
	}
	var mu sync.Mutex
	stats := map[string]int{}
	t.Cleanup(func() { t.Logf("%d sequences × %d ops; outcomes: %v", seqs, ops, stats) })
	for seed := range seqs {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			b, c := open(t)
			s := &sequence{t: t, b: b, c: c, rng: rand.New(rand.NewPCG(uint64(seed), 0x7a5c)),
				model: refModel{byID: map[string]*mTask{}}, dead: map[string]bool{}}
			s.openHolds()
			for i := range ops {
				s.step(i)
				s.check()
			}
			mu.Lock()
			for _, l := range s.log {
				stats[outcomeOf(l)]++
			}
			mu.Unlock()
		})
	}
}

func (s *sequence) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s\nops so far:\n  %s", fmt.Sprintf(format, args...), joinLines(s.log))
}

func joinLines(l []string) string {
	out := ""
	for i, x := range l {
		if i > 0 {
			out += "\n  "
		}
		out += x
	}
	return out
}

func (s *sequence) nowMs() int64 { return s.c.Now().UnixMilli() }

// pickTask returns a random known task (deleted ones included), or nil.
func (s *sequence) pickTask() *mTask {
	if len(s.model.tasks) == 0 {
		return nil
	}
	return s.model.tasks[s.rng.IntN(len(s.model.tasks))]
}

// pickLease returns a lease the test obtained: a live one more often than
// not, else a recent or any earlier one.
func (s *sequence) pickLease() (backend.Lease, bool) {
	if len(s.leases) == 0 {
		return backend.Lease{}, false
	}
	if s.rng.IntN(5) < 3 {
		var live []backend.Lease
		for _, l := range s.leases {
			if s.model.byID[l.TaskID].live(l, s.nowMs()) {
				live = append(live, l)
			}
		}
		if len(live) > 0 {
			return live[s.rng.IntN(len(live))], true
		}
	}
	n := len(s.leases)
	if s.rng.IntN(2) == 0 {
		return s.leases[n-1-s.rng.IntN(min(n, 3))], true
	}
	return s.leases[s.rng.IntN(n)], true
}

// pickAuth returns an endpoint and tenant for m: its own most of the time.
func (s *sequence) pickAuth(m *mTask) (string, string) {
	if s.rng.IntN(7) > 0 {
		return m.endpoint, m.tenant
	}
	return []string{endpointA, endpointB}[s.rng.IntN(2)], []string{tenantA, tenantB}[s.rng.IntN(2)]
}

// compare fails when the backend's error class differs from the model's.
func (s *sequence) compare(op string, err error, want string) {
	s.t.Helper()
	if got := errClass(err); got != want {
		s.fatalf("%s: backend %s, model %s", op, got, want)
	}
}

var methods = []string{mcp.MethodElicitationCreate, mcp.MethodSamplingCreateMessage, mcp.MethodRootsList}

func requestFor(method string) *mcp.InputRequest {
	switch method {
	case mcp.MethodSamplingCreateMessage:
		return reqSample
	case mcp.MethodRootsList:
		return reqRoots
	}
	return reqElicit
}

// step applies one random operation.
func (s *sequence) step(i int) {
	ops := []struct {
		weight int
		fn     func() string
	}{
		{8, s.opCreate}, {12, s.opClaim}, {4, s.opHeartbeat}, {10, s.opRequestInput}, {10, s.opUpdate},
		{3, s.opComplete}, {2, s.opFail}, {1, s.opCancel}, {3, s.opRetry}, {3, s.opRelease},
		{3, s.opRequestCancel}, {5, s.opAdvance}, {3, s.opRescue}, {2, s.opDeleteExpired}, {3, s.opList},
		{5, s.opReportProgress}, {4, s.opCheckpoint}, {2, s.opCompleteCheckpoint}, {2, s.opKillInstance}, {3, s.opRescueDead},
		{6, s.opClaimQueues},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := s.rng.IntN(total)
	for _, o := range ops {
		if n < o.weight {
			s.log = append(s.log, fmt.Sprintf("%d: %s", i, o.fn()))
			return
		}
		n -= o.weight
	}
}

// check compares everything observable of every task with the model.
func (s *sequence) check() {
	s.t.Helper()
	now := s.c.Now()
	for _, m := range s.model.tasks {
		got, found, err := s.b.FindTask(bg, rc(m.id, m.endpoint, m.tenant))
		if err != nil {
			s.fatalf("FindTask(%s): %v", m.id, err)
		}
		gone := m.deleted || m.expired(now.UnixMilli())
		cancel, cerr := s.b.Jobs().CancelRequested(bg, m.id)
		if gone {
			if found || errClass(cerr) != "ErrNotFound" {
				s.fatalf("task %s should be gone: found %v, CancelRequested err %v", m.id, found, cerr)
			}
			continue
		}
		if !found || cerr != nil {
			s.fatalf("task %s: found %v, CancelRequested err %v", m.id, found, cerr)
		}
		if cancel != m.cancel {
			s.fatalf("task %s: cancel intent %v, model %v", m.id, cancel, m.cancel)
		}
		gotReqs := map[string]string{}
		for k, r := range got.InputRequests() {
			gotReqs[k] = r.Method
			if compactJSON(r.Params) != compactJSON(requestFor(r.Method).Params) {
				s.fatalf("task %s: request %s params %s", m.id, k, r.Params)
			}
		}
		wantReqs := maps.Clone(m.outstanding)
		if wantReqs == nil {
			wantReqs = map[string]string{}
		}
		if got.Status() != m.status || got.StatusMessage() != m.message || !maps.Equal(gotReqs, wantReqs) ||
			(got.Result() != nil) != m.hasResult || (got.Error() != nil) != (m.status == task.Failed) {
			s.fatalf("task %s: backend %s %q reqs=%v result=%v error=%v; model %s %q reqs=%v result=%v",
				m.id, got.Status(), got.StatusMessage(), gotReqs, got.Result() != nil, got.Error() != nil,
				m.status, m.message, wantReqs, m.hasResult)
		}
		if gp, wp := got.Params().Progress, m.progress; (gp == nil) != (wp == nil) || (gp != nil && *gp != *wp) {
			s.fatalf("task %s: progress %v, model %v", m.id, gp, wp)
		}
		if e := got.Error(); e != nil {
			want := toolError
			if m.errExhaust {
				want = exhausted
			}
			if e.Code != want.Code || e.Message != want.Message {
				s.fatalf("task %s: error %+v, want %+v", m.id, e, want)
			}
		}
		if !got.CreatedAt().Equal(time.UnixMilli(m.createdMs)) {
			s.fatalf("task %s: createdAt %v, model %v", m.id, got.CreatedAt(), time.UnixMilli(m.createdMs))
		}
		// lastUpdatedAt never goes backwards, and a visible change is
		// stamped with the time it was made.
		view, _ := json.Marshal([]any{got.Status(), got.StatusMessage(), gotReqs, got.Result() != nil, got.Error(),
			got.Params().Progress})
		upd := got.LastUpdatedAt()
		switch {
		case upd.Before(m.lastSeen) || upd.After(now) || upd.Before(got.CreatedAt()):
			s.fatalf("task %s: lastUpdatedAt %v (previously %v, now %v)", m.id, upd, m.lastSeen, now)
		case m.lastView != "" && string(view) != m.lastView && !upd.Equal(now):
			s.fatalf("task %s: changed without lastUpdatedAt = now (%v, now %v)", m.id, upd, now)
		}
		m.lastSeen, m.lastView = upd, string(view)
	}
}
