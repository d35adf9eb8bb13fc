package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
)

// callStats accumulates the calls of one store method.
type callStats struct {
	calls, items, nanos atomic.Int64
}

func (c *callStats) add(items int, d time.Duration) {
	c.calls.Add(1)
	c.items.Add(int64(items))
	c.nanos.Add(int64(d))
}

// storeStats are the calls the worker runtime made to its store.
type storeStats struct {
	claim, cancelRequested, complete, completeBatch, heartbeat callStats
	progress                                                   callStats // ReportProgress
	checkpoints                                                callStats // SaveCheckpoints

	mu     sync.Mutex
	claims []claimCall // every Claim, in order of return
}

// claimCall is one Claim: how many jobs it returned and how long it took.
type claimCall struct {
	jobs int
	d    time.Duration
}

// claimTrend compares the Claim latency at the start of the run (deep
// queue) with its end (shallow queue): the mean of the first and of the
// last fifth of the calls that returned jobs, with the jobs claimed before
// each fifth began.
func (s *storeStats) claimTrend(total int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var calls []claimCall
	for _, c := range s.claims {
		if c.jobs > 0 {
			calls = append(calls, c)
		}
	}
	k := len(calls) / 5
	if k == 0 {
		return ""
	}
	mean := func(cs []claimCall) (time.Duration, float64) {
		var d time.Duration
		var j int
		for _, c := range cs {
			d += c.d
			j += c.jobs
		}
		return d / time.Duration(len(cs)), float64(j) / float64(len(cs))
	}
	before := 0
	for _, c := range calls[:len(calls)-k] {
		before += c.jobs
	}
	d1, j1 := mean(calls[:k])
	d2, j2 := mean(calls[len(calls)-k:])
	return fmt.Sprintf("Claim latency vs queue depth: first %d claims (queue %d → %d) mean %s for %.0f jobs; last %d claims (queue %d → 0) mean %s for %.0f jobs",
		k, total, total-int(float64(k)*j1), fmtDur(d1), j1, k, total-before, fmtDur(d2), j2)
}

// String renders the calls: count, items per call, mean latency, and the
// summed latency in seconds (calls overlap, so sums exceed the wall time).
func (s *storeStats) String() string {
	var parts []string
	for _, e := range []struct {
		name string
		c    *callStats
		unit string
	}{
		{"Claim", &s.claim, "jobs"},
		{"CancelRequested", &s.cancelRequested, ""},
		{"Complete", &s.complete, ""},
		{"CompleteBatch", &s.completeBatch, "items"},
		{"Heartbeat", &s.heartbeat, ""},
	} {
		n := e.c.calls.Load()
		if n == 0 {
			continue
		}
		mean := time.Duration(e.c.nanos.Load() / n)
		p := fmt.Sprintf("%s %d calls, mean %s, sum %.1fs", e.name, n, fmtDur(mean), time.Duration(e.c.nanos.Load()).Seconds())
		if e.unit != "" {
			p += fmt.Sprintf(", %.1f %s/call", float64(e.c.items.Load())/float64(n), e.unit)
		}
		parts = append(parts, p)
	}
	return "store calls by the runtime: " + strings.Join(parts, "; ")
}

// jobStore is the job side of a taskwire store as the bench drives it:
// both stores record progress and keep checkpoints.
type jobStore interface {
	backend.JobStore
	backend.ProgressReporter
	backend.Checkpointer
}

// instrumented is a jobStore that times the calls the runtime makes on its
// hot path. It is the bench's profiling aid; it changes nothing else.
type instrumented struct {
	jobStore
	stats *storeStats
	// skipCancelRead answers CancelRequested with false without asking the
	// store: the -whatif-no-cancel-read experiment, an upper bound for a
	// Claim that returns the cancel intent with each job. Not taskwire's
	// behaviour: figures taken with it are labelled as such.
	skipCancelRead bool
}

func (s *instrumented) Claim(ctx context.Context, p backend.ClaimParams) ([]backend.JobRow, error) {
	t0 := time.Now()
	jobs, err := s.jobStore.Claim(ctx, p)
	d := time.Since(t0)
	s.stats.claim.add(len(jobs), d)
	s.stats.mu.Lock()
	s.stats.claims = append(s.stats.claims, claimCall{jobs: len(jobs), d: d})
	s.stats.mu.Unlock()
	return jobs, err
}

func (s *instrumented) CancelRequested(ctx context.Context, taskID string) (bool, error) {
	if s.skipCancelRead {
		s.stats.cancelRequested.add(0, 0)
		return false, nil
	}
	t0 := time.Now()
	yes, err := s.jobStore.CancelRequested(ctx, taskID)
	s.stats.cancelRequested.add(1, time.Since(t0))
	return yes, err
}

func (s *instrumented) Complete(ctx context.Context, l backend.Lease, res *mcp.CallToolResult, message string) error {
	t0 := time.Now()
	err := s.jobStore.Complete(ctx, l, res, message)
	s.stats.complete.add(1, time.Since(t0))
	return err
}

func (s *instrumented) Heartbeat(ctx context.Context, l backend.Lease, lease time.Duration) error {
	t0 := time.Now()
	err := s.jobStore.Heartbeat(ctx, l, lease)
	s.stats.heartbeat.add(1, time.Since(t0))
	return err
}
