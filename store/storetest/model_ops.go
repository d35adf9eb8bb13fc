package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// modelQueues are the queues the model test creates jobs in ("" is the
// default queue) and modelClaimQueues those it claims from: no claim
// names "unserved", whose jobs must never be claimed.
var (
	modelQueues      = []string{"", backend.DefaultQueue, "q-b", "unserved"}
	modelClaimQueues = []string{"", backend.DefaultQueue, "q-b"}
)

// modelArgs are the arguments the model test creates tasks with: several
// spellings of two values, labelled by hand so that the model knows which
// texts an idempotency key must treat as the same arguments.
var modelArgs = []struct{ text, value string }{
	{`{"a":1,"b":[true,null]}`, "one"},
	{`{ "b": [ true, null ], "a": 1 }`, "one"},
	{`{"\u0061":1,"b":[true,null]}`, "one"},
	{`{"a":2,"b":[true,null]}`, "two"},
	{`{"b":[true,null],"a":2}`, "two"},
	{`{"a":2.0,"b":[true,null]}`, "two-point-zero"},
}

// The operations of the model test. Each applies one random call to the
// backend, compares its result with the model's, updates the model and
// returns a line for the operation log.

func (s *sequence) opCreate() string {
	endpoint := []string{endpointA, endpointB}[s.rng.IntN(2)]
	tenant := []string{tenantA, tenantB}[s.rng.IntN(2)]
	kind := []string{toolA, toolB}[s.rng.IntN(2)]
	arg := modelArgs[s.rng.IntN(len(modelArgs))]
	args := arg.text
	ttl := []time.Duration{2 * time.Second, 6 * time.Second, -1}[s.rng.IntN(3)]
	opts := backend.EnqueueOptions{TTL: ttl, MaxAttempts: 1 + s.rng.IntN(3),
		Queue: modelQueues[s.rng.IntN(len(modelQueues))], Priority: s.rng.IntN(backend.LowestPriority + 1)}
	if s.rng.IntN(3) == 0 {
		opts.IdempotencyKey = []string{"idem-1", "idem-2"}[s.rng.IntN(2)]
	}
	runAtMs := s.nowMs()
	if s.rng.IntN(4) == 0 {
		opts.RunAt = s.c.Now().Add(time.Duration(s.rng.IntN(2000)) * time.Millisecond)
		runAtMs = opts.RunAt.UnixMilli()
	}
	desc := fmt.Sprintf("create %s/%s/%s args=%s ttl=%v max=%d key=%q runAt=+%dms queue=%q priority=%d", endpoint,
		tenant, kind, args, ttl, opts.MaxAttempts, opts.IdempotencyKey, runAtMs-s.nowMs(), opts.Queue, opts.Priority)
	got, err := s.b.Enqueue(bg, creation(s.t, endpoint, tenant, kind, args), opts)

	nowMs := s.nowMs()
	if opts.IdempotencyKey != "" {
		for _, m := range s.model.tasks {
			if m.deleted || m.idemKey != opts.IdempotencyKey || m.endpoint != endpoint || m.tenant != tenant || m.kind != kind {
				continue
			}
			if m.expired(nowMs) {
				m.deleted = true
				break
			}
			if m.value != arg.value {
				s.compare(desc, err, "ErrIdempotencyConflict")
				return desc + " → conflict"
			}
			s.compare(desc, err, "ok")
			if got.ID() != m.id {
				s.fatalf("%s: returned %s, want the existing %s", desc, got.ID(), m.id)
			}
			return desc + " → existing " + short(m.id)
		}
	}
	s.compare(desc, err, "ok")
	if s.model.byID[got.ID()] != nil {
		s.fatalf("%s: reused task ID %s", desc, got.ID())
	}
	m := &mTask{
		id: got.ID(), endpoint: endpoint, tenant: tenant, kind: kind, idemKey: opts.IdempotencyKey, value: arg.value,
		status: task.Working, used: map[string]bool{}, responses: map[string]string{}, createdMs: nowMs,
		state: jobAvailable, maxAttempts: opts.MaxAttempts, runAtMs: runAtMs, lastSeen: got.LastUpdatedAt(),
		queue: cmp.Or(opts.Queue, backend.DefaultQueue), priority: cmp.Or(opts.Priority, backend.DefaultPriority),
	}
	if ttl > 0 {
		m.expiresMs = nowMs + ttl.Milliseconds()
	}
	s.model.tasks = append(s.model.tasks, m)
	s.model.byID[m.id] = m
	// The task is readable, as returned, when Enqueue returns.
	if found, ok, err := s.b.FindTask(bg, rc(m.id, endpoint, tenant)); err != nil || !ok {
		s.fatalf("%s: FindTask after Enqueue: %v %v", desc, ok, err)
	} else {
		sameSnapshot(s.t, desc, got, found)
	}
	if got.Status() != task.Working || !got.CreatedAt().Equal(s.c.Now()) || got.TTL() != max(ttl, 0) {
		s.fatalf("%s: Enqueue returned %v created %v TTL %v", desc, got.Status(), got.CreatedAt(), got.TTL())
	}
	return desc + " → " + short(m.id)
}

func (s *sequence) opClaim() string {
	limit := 1 + s.rng.IntN(3)
	var kinds []string
	if s.rng.IntN(3) == 0 {
		kinds = []string{[]string{toolA, toolB}[s.rng.IntN(2)]}
	}
	leaseDur := time.Duration(1000+s.rng.IntN(2000)) * time.Millisecond
	queue := modelClaimQueues[s.rng.IntN(len(modelClaimQueues))]
	var instance string
	if n := s.rng.IntN(3); n < len(s.holds) {
		instance = s.holds[n].ID()
	}
	desc := fmt.Sprintf("claim limit=%d kinds=%v lease=%v queue=%q instance=%t", limit, kinds, leaseDur, queue, instance != "")
	jobs, err := s.b.Jobs().Claim(bg, backend.ClaimParams{Worker: "model", Kinds: kinds, Queue: queue, Limit: limit,
		Lease: leaseDur, Now: s.c.Now(), Instance: instance})
	s.compare(desc, err, "ok")
	s.checkClaimed(desc, jobs, s.claimable(queue, kinds, limit), leaseDur, instance)
	return fmt.Sprintf("%s → %d jobs", desc, len(jobs))
}

// claimable returns the model's tasks that a claim of up to limit jobs of
// queue and kinds takes, in claim order.
func (s *sequence) claimable(queue string, kinds []string, limit int) []*mTask {
	nowMs := s.nowMs()
	var want []*mTask
	for _, m := range s.model.tasks {
		if m.deleted || m.expired(nowMs) || m.runAtMs > nowMs || (len(kinds) > 0 && !slices.Contains(kinds, m.kind)) ||
			m.queue != cmp.Or(queue, backend.DefaultQueue) {
			continue
		}
		if m.state == jobAvailable || (m.state == jobAwaiting && m.cancel) {
			want = append(want, m)
		}
	}
	slices.SortFunc(want, func(a, b *mTask) int {
		return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.runAtMs, b.runAtMs),
			cmp.Compare(a.createdMs, b.createdMs), cmp.Compare(a.id, b.id))
	})
	return want[:min(limit, len(want))]
}

// checkClaimed compares the jobs a claim returned with want (claimable's
// answer) and marks them running in the model, under a lease of leaseDur
// from now held by instance.
func (s *sequence) checkClaimed(desc string, jobs []backend.JobRow, want []*mTask, leaseDur time.Duration, instance string) {
	nowMs := s.nowMs()
	if len(jobs) != len(want) {
		s.fatalf("%s: claimed %d jobs, model %d", desc, len(jobs), len(want))
	}
	for i, j := range jobs {
		m := want[i]
		if j.TaskID != m.id {
			s.fatalf("%s: job %d is %s, model %s", desc, i, j.TaskID, m.id)
		}
		if j.Attempt <= m.attempt || j.Failures != m.failures || j.InterruptedRuns != m.interrupted ||
			j.InputRounds != m.inputRounds || !j.FirstFailure.Equal(msTime(m.firstFailureMs)) ||
			j.MaxAttempts != m.maxAttempts || j.Kind != m.kind ||
			!j.LeaseExpires.Equal(s.c.Now().Add(leaseDur)) || j.CancelRequested != m.cancel {
			s.fatalf("%s: job %s attempt %d (was %d) failures %d/%d interrupted %d/%d input rounds %d/%d "+
				"first failure %v/%v max %d/%d kind %s cancel %v/%v",
				desc, m.id, j.Attempt, m.attempt, j.Failures, m.failures, j.InterruptedRuns, m.interrupted,
				j.InputRounds, m.inputRounds, j.FirstFailure, msTime(m.firstFailureMs), j.MaxAttempts, m.maxAttempts, j.Kind, j.CancelRequested, m.cancel)
		}
		if string(j.Checkpoint) != m.checkpoint || (j.Checkpoint == nil) != (m.checkpoint == "") {
			s.fatalf("%s: job %s checkpoint %q, model %q", desc, m.id, j.Checkpoint, m.checkpoint)
		}
		if gp, wp := j.Progress, m.progress; (gp == nil) != (wp == nil) || (gp != nil && *gp != *wp) {
			s.fatalf("%s: job %s progress %v, model %v", desc, m.id, gp, wp)
		}
		got := map[string]string{}
		for k, v := range j.Responses {
			got[k] = compactJSON(v)
		}
		if !maps.Equal(got, m.responses) {
			s.fatalf("%s: job %s responses %v, model %v", desc, m.id, got, m.responses)
		}
		m.state, m.attempt, m.leaseMs, m.instance = jobRunning, j.Attempt, nowMs+leaseDur.Milliseconds(), instance
		s.leases = append(s.leases, j.Lease)
	}
}

// fenced runs a fenced write with a random lease and compares the error
// class; apply updates the model when the lease is live and returns the
// expected class.
func (s *sequence) fenced(name string, write func(l backend.Lease) error, apply func(m *mTask) string) string {
	l, ok := s.pickLease()
	if !ok {
		return name + ": no lease"
	}
	return s.fencedWith(l, name, write, apply)
}

func (s *sequence) fencedWith(l backend.Lease, name string, write func(l backend.Lease) error, apply func(m *mTask) string) string {
	desc := fmt.Sprintf("%s %s#%d", name, short(l.TaskID), l.Attempt)
	err := write(l)
	m := s.model.byID[l.TaskID]
	if !m.live(l, s.nowMs()) {
		s.compare(desc, err, "ErrLeaseLost")
		return desc + " → lease lost"
	}
	want := apply(m)
	s.compare(desc, err, want)
	return desc + " → " + want
}

func (s *sequence) opHeartbeat() string {
	d := time.Duration(500+s.rng.IntN(2000)) * time.Millisecond
	return s.fenced("heartbeat", func(l backend.Lease) error { return s.b.Jobs().Heartbeat(bg, l, d) },
		func(m *mTask) string { m.leaseMs = s.nowMs() + d.Milliseconds(); return "ok" })
}

func (s *sequence) opRequestInput() string {
	l, ok := s.pickLease()
	if !ok {
		return "request-input: no lease"
	}
	used := keysOf(s.model.byID[l.TaskID].used)
	reqs := mcp.InputRequests{}
	for range 1 + s.rng.IntN(2) {
		key := fmt.Sprintf("key%d", s.keyN)
		if s.rng.IntN(5) < 2 && len(used) > 0 {
			key = used[s.rng.IntN(len(used))]
		} else {
			s.keyN++
		}
		reqs[key] = requestFor(methods[s.rng.IntN(len(methods))])
	}
	msg := fmt.Sprintf("need %d", len(reqs))
	return s.fencedWith(l, fmt.Sprintf("request-input %v", keysOf(reqs)),
		func(l backend.Lease) error { return s.b.Jobs().RequestInput(bg, l, reqs, msg) },
		func(m *mTask) string {
			for k := range reqs {
				if m.used[k] {
					return "ErrKeyReused"
				}
			}
			m.outstanding = map[string]string{}
			for k, r := range reqs {
				m.used[k] = true
				m.outstanding[k] = r.Method
			}
			m.status, m.message = task.InputRequired, msg
			m.state, m.leaseMs = jobAwaiting, 0 // run-at kept
			m.inputRounds++
			return "ok"
		})
}

func (s *sequence) opUpdate() string {
	m := s.pickTask()
	if s.rng.IntN(4) > 0 {
		for _, x := range s.model.tasks {
			if len(x.outstanding) > 0 && !x.deleted {
				m = x
				break
			}
		}
	}
	if m == nil {
		return "update: no task"
	}
	endpoint, tenant := s.pickAuth(m)
	resp := mcp.InputResponses{}
	for k, method := range m.outstanding {
		switch s.rng.IntN(6) {
		case 0: // leave unanswered
		case 1:
			resp[k] = wrongAnswerFor(method)
		default:
			resp[k] = answerFor(method)
		}
	}
	if s.rng.IntN(4) == 0 && s.keyN > 0 { // an unknown or already answered key
		resp[fmt.Sprintf("key%d", s.rng.IntN(s.keyN))] = answerFor(methods[s.rng.IntN(len(methods))])
	}
	desc := fmt.Sprintf("update %s as %s/%s keys=%v", short(m.id), endpoint, tenant, keysOf(resp))
	err := s.b.UpdateTask(bg, task.UpdateContext{RequestContext: rc(m.id, endpoint, tenant), Responses: resp})
	nowMs := s.nowMs()
	if s.model.visible(m.id, endpoint, tenant, nowMs) == nil {
		s.compare(desc, err, "ErrNotFound")
		return desc + " → not found"
	}
	s.compare(desc, err, "ok")
	accepted := 0
	for k, raw := range resp {
		method, ok := m.outstanding[k]
		if !ok || compactJSON(raw) != compactJSON(answerFor(method)) {
			continue
		}
		m.responses[k] = compactJSON(raw)
		delete(m.outstanding, k)
		accepted++
	}
	if accepted > 0 && len(m.outstanding) == 0 {
		m.status, m.message, m.outstanding = task.Working, "", nil
		if m.state == jobAwaiting {
			m.state = jobAvailable // run-at kept
		}
	}
	return fmt.Sprintf("%s → accepted %d", desc, accepted)
}

// opReportProgress reports a message, with a count two times in three.
func (s *sequence) opReportProgress() string {
	n := s.rng.IntN(1000)
	msg := fmt.Sprintf("row %d", n)
	var p *task.Progress
	if s.rng.IntN(3) > 0 {
		p = &task.Progress{Current: float64(n), Total: float64(s.rng.IntN(2) * 1000)}
	}
	return s.fenced("progress", func(l backend.Lease) error { return reporter(s.b).ReportProgress(bg, l, msg, p) },
		func(m *mTask) string {
			m.message, m.progress = msg, p
			return "ok"
		})
}

// opCheckpoint saves a checkpoint under a random lease: the model keeps
// it with the job, and the next claim must carry it.
func (s *sequence) opCheckpoint() string {
	data := fmt.Sprintf(`{"page":%d}`, s.rng.IntN(100))
	return s.fenced("checkpoint "+data, func(l backend.Lease) error {
		lost, err := checkpointer(s.t, s.b).SaveCheckpoints(bg, []backend.CheckpointWrite{{Lease: l, Data: []byte(data)}})
		if err == nil && lost[0] {
			err = backend.ErrLeaseLost
		}
		return err
	}, func(m *mTask) string {
		m.checkpoint = data
		return "ok"
	})
}

// opCompleteCheckpoint completes under a random lease with a checkpoint
// saved by the same write (backend.Completion.Checkpoint, on a
// BatchCompleter): the model completes the task and keeps the checkpoint,
// or changes neither when the lease is lost.
func (s *sequence) opCompleteCheckpoint() string {
	bc, ok := s.b.Jobs().(backend.BatchCompleter)
	if !ok {
		return s.opComplete()
	}
	data := fmt.Sprintf(`{"done":%d}`, s.rng.IntN(100))
	return s.fenced("complete with checkpoint "+data, func(l backend.Lease) error {
		lost, err := bc.CompleteBatch(bg, []backend.Completion{{Lease: l, Result: textResult, Message: "completed",
			Checkpoint: []byte(data)}})
		if err == nil && lost[0] {
			err = backend.ErrLeaseLost
		}
		return err
	}, func(m *mTask) string {
		m.terminate(task.Completed, "completed")
		m.hasResult, m.checkpoint = true, data
		return "ok"
	})
}

func (s *sequence) opComplete() string {
	return s.fenced("complete", func(l backend.Lease) error { return s.b.Jobs().Complete(bg, l, textResult, "completed") },
		func(m *mTask) string { m.terminate(task.Completed, "completed"); m.hasResult = true; return "ok" })
}

func (s *sequence) opFail() string {
	return s.fenced("fail", func(l backend.Lease) error { return s.b.Jobs().Fail(bg, l, toolError, "failed", "") },
		func(m *mTask) string { m.terminate(task.Failed, "failed"); return "ok" })
}

func (s *sequence) opCancel() string {
	return s.fenced("cancel", func(l backend.Lease) error { return s.b.Jobs().Cancel(bg, l, "cancelled") },
		func(m *mTask) string { m.terminate(task.Cancelled, "cancelled"); return "ok" })
}

func (s *sequence) opRetry() string {
	runAt := s.c.Now().Add(time.Duration(s.rng.IntN(1500)) * time.Millisecond)
	var c backend.FailureCategory // none, or unavailable: retried past MaxAttempts
	if s.rng.IntN(3) == 0 {
		c = backend.FailureUnavailable
	}
	name := "retry"
	if c != "" {
		name += " " + string(c)
	}
	return s.fenced(name, func(l backend.Lease) error { return s.b.Jobs().Retry(bg, l, runAt, "retrying", c) },
		func(m *mTask) string {
			m.fail(s.nowMs(), runAt.UnixMilli(), "retrying", true, c == backend.FailureUnavailable)
			return "ok"
		})
}

func (s *sequence) opRelease() string {
	return s.fenced("release", func(l backend.Lease) error { return s.b.Jobs().Release(bg, l) },
		func(m *mTask) string { m.state, m.leaseMs = jobAvailable, 0; return "ok" }) // run-at kept
}

func (s *sequence) opRequestCancel() string {
	m := s.pickTask()
	if m == nil {
		return "request-cancel: no task"
	}
	endpoint, tenant := s.pickAuth(m)
	desc := fmt.Sprintf("request-cancel %s as %s/%s", short(m.id), endpoint, tenant)
	err := s.b.RequestCancel(bg, rc(m.id, endpoint, tenant))
	if s.model.visible(m.id, endpoint, tenant, s.nowMs()) == nil {
		s.compare(desc, err, "ErrNotFound")
		return desc + " → not found"
	}
	s.compare(desc, err, "ok")
	if !m.status.Terminal() {
		m.cancel = true
	}
	return desc + " → ok"
}

func (s *sequence) opAdvance() string {
	d := time.Duration(s.rng.IntN(1500)) * time.Millisecond
	s.c.Advance(d)
	return fmt.Sprintf("advance %v", d)
}

func (s *sequence) opRescue() string {
	limit, maxRuns := 1+s.rng.IntN(3), 1+s.rng.IntN(3)
	n, err := s.b.Jobs().RescueExpired(bg, backend.RescueParams{Now: s.c.Now(), Limit: limit, MaxInterruptedRuns: maxRuns})
	desc := fmt.Sprintf("rescue limit=%d max-interrupted=%d", limit, maxRuns)
	s.compare(desc, err, "ok")
	nowMs := s.nowMs()
	var want []*mTask
	for _, m := range s.model.tasks {
		if !m.deleted && m.state == jobRunning && m.leaseMs <= nowMs {
			want = append(want, m)
		}
	}
	slices.SortFunc(want, func(a, b *mTask) int { return cmp.Or(cmp.Compare(a.leaseMs, b.leaseMs), cmp.Compare(a.id, b.id)) })
	want = want[:min(limit, len(want))]
	if n != len(want) {
		s.fatalf("%s: rescued %d, model %d", desc, n, len(want))
	}
	for _, m := range want {
		m.rescued(maxRuns)
	}
	return fmt.Sprintf("%s → %d", desc, n)
}

// rescued applies a rescue (by lease or by liveness) to the model.
func (m *mTask) rescued(maxRuns int) {
	m.interrupted++
	if m.interrupted >= maxRuns {
		m.terminate(task.Failed, "")
		m.errExhaust = true
	} else {
		m.state, m.leaseMs = jobAvailable, 0 // run-at kept
		m.message = backend.InterruptedMessage
	}
}

// openHolds takes the sequence's two instance holds, closed at the end of
// the test, unless the store holds none here.
func (s *sequence) openHolds() {
	lr, ok := s.b.Jobs().(backend.LivenessRescuer)
	if !ok {
		return
	}
	for range 2 {
		h, err := lr.HoldInstance(bg)
		if errors.Is(err, backend.ErrLivenessUnsupported) {
			return
		}
		if err != nil {
			s.fatalf("HoldInstance: %v", err)
		}
		s.t.Cleanup(func() { h.Close() })
		s.holds = append(s.holds, h)
	}
}

// opKillInstance closes one hold, as if its process died, and takes a new
// one in its place.
func (s *sequence) opKillInstance() string {
	if len(s.holds) == 0 {
		return "kill-instance: no holds"
	}
	i := s.rng.IntN(len(s.holds))
	s.dead[s.holds[i].ID()] = true
	if err := s.holds[i].Close(); err != nil {
		s.fatalf("kill-instance: Close: %v", err)
	}
	h, err := s.b.Jobs().(backend.LivenessRescuer).HoldInstance(bg)
	if err != nil {
		s.fatalf("kill-instance: HoldInstance: %v", err)
	}
	s.t.Cleanup(func() { h.Close() })
	s.holds[i] = h
	return fmt.Sprintf("kill-instance %d", i)
}

// opRescueDead runs two RescueDead passes of a live hold (a store may
// need two to count an instance dead), with a limit above the jobs: every
// running job of a dead instance is taken, whatever its lease.
func (s *sequence) opRescueDead() string {
	if len(s.holds) == 0 {
		return "rescue-dead: no holds"
	}
	maxRuns := 1 + s.rng.IntN(3)
	desc := fmt.Sprintf("rescue-dead max-interrupted=%d", maxRuns)
	var n int
	h := s.holds[s.rng.IntN(len(s.holds))]
	for range 2 {
		k, err := h.RescueDead(bg,
			backend.RescueParams{Now: s.c.Now(), Limit: 1000, MaxInterruptedRuns: maxRuns})
		s.compare(desc, err, "ok")
		n += k
	}
	var want []*mTask
	for _, m := range s.model.tasks {
		if !m.deleted && m.state == jobRunning && s.dead[m.instance] {
			want = append(want, m)
		}
	}
	if n != len(want) {
		s.fatalf("%s: rescued %d, model %d", desc, n, len(want))
	}
	for _, m := range want {
		m.rescued(maxRuns)
	}
	return fmt.Sprintf("%s → %d", desc, n)
}

func (s *sequence) opDeleteExpired() string {
	limit := 1 + s.rng.IntN(3)
	n, err := s.b.Jobs().DeleteExpired(bg, s.c.Now(), limit)
	desc := fmt.Sprintf("delete-expired limit=%d", limit)
	s.compare(desc, err, "ok")
	nowMs := s.nowMs()
	var want []*mTask
	for _, m := range s.model.tasks {
		if !m.deleted && m.expired(nowMs) {
			want = append(want, m)
		}
	}
	slices.SortFunc(want, func(a, b *mTask) int { return cmp.Or(cmp.Compare(a.expiresMs, b.expiresMs), cmp.Compare(a.id, b.id)) })
	want = want[:min(limit, len(want))]
	if n != len(want) {
		s.fatalf("%s: deleted %d, model %d", desc, n, len(want))
	}
	for _, m := range want {
		m.deleted = true
	}
	return fmt.Sprintf("%s → %d", desc, n)
}

// msTime is the time of Unix milliseconds ms, zero for 0.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
