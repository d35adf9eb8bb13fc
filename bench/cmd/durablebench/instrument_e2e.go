package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// stagesPrefix starts the line on which "durablebench e2e-serve -stages"
// reports, before it exits, where each task's time went.
const stagesPrefix = "stages: "

// stageTimes are the moments one task passed through the e2e server.
type stageTimes struct {
	created   time.Time // Enqueue returned
	verified  time.Time // the tools/call read-back returned
	claimed   time.Time // the Claim that took its job returned
	handled   time.Time // its completion was submitted
	committed time.Time // the CompleteBatch (or Complete) that completed it returned
	seen      time.Time // the first FindTask that returned it completed
}

// stageTracer records stageTimes per task ID for "e2e-serve -stages": the
// profiling aid that splits create → completed into its steps. It wraps the
// store as the server and the worker see it and changes nothing else.
type stageTracer struct {
	mu    sync.Mutex
	tasks map[string]*stageTimes
	calls storeStats // the worker's Claim and CompleteBatch calls
}

func newStageTracer() *stageTracer { return &stageTracer{tasks: map[string]*stageTimes{}} }

// mark sets one stage of task id to now, once.
func (s *stageTracer) mark(id string, field func(*stageTimes) *time.Time) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.tasks[id]
	if st == nil {
		st = &stageTimes{}
		s.tasks[id] = st
	}
	if f := field(st); f.IsZero() {
		*f = now
	}
}

// report renders the percentiles of each step over the tasks that passed
// every stage.
func (s *stageTracer) report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	steps := []struct {
		name     string
		from, to func(*stageTimes) time.Time
	}{
		{"created→verified", func(t *stageTimes) time.Time { return t.created }, func(t *stageTimes) time.Time { return t.verified }},
		{"created→claimed", func(t *stageTimes) time.Time { return t.created }, func(t *stageTimes) time.Time { return t.claimed }},
		{"claimed→handled", func(t *stageTimes) time.Time { return t.claimed }, func(t *stageTimes) time.Time { return t.handled }},
		{"handled→committed", func(t *stageTimes) time.Time { return t.handled }, func(t *stageTimes) time.Time { return t.committed }},
		{"committed→seen", func(t *stageTimes) time.Time { return t.committed }, func(t *stageTimes) time.Time { return t.seen }},
		{"created→seen", func(t *stageTimes) time.Time { return t.created }, func(t *stageTimes) time.Time { return t.seen }},
	}
	ds := make([][]time.Duration, len(steps))
	for _, t := range s.tasks {
		if t.created.IsZero() || t.verified.IsZero() || t.claimed.IsZero() || t.handled.IsZero() || t.committed.IsZero() || t.seen.IsZero() {
			continue
		}
		for i, st := range steps {
			ds[i] = append(ds[i], st.to(t).Sub(st.from(t)))
		}
	}
	parts := []string{fmt.Sprintf("%d tasks", len(ds[0])), s.calls.String()}
	for i, st := range steps {
		d := ds[i]
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		parts = append(parts, fmt.Sprintf("%s p50 %s p99 %s", st.name, fmtDur(d[len(d)/2]), fmtDur(d[len(d)*99/100])))
	}
	return strings.Join(parts, "; ")
}

// tracedStore is the store as the server sees it under -stages.
type tracedStore struct {
	backend.Store
	tr *stageTracer
}

func (s tracedStore) FindTask(ctx context.Context, rc task.RequestContext) (task.Task, bool, error) {
	t, found, err := s.Store.FindTask(ctx, rc)
	if err == nil && found {
		s.tr.mark(rc.TaskID, func(st *stageTimes) *time.Time { return &st.verified })
		if t.Status() == task.Completed {
			s.tr.mark(rc.TaskID, func(st *stageTimes) *time.Time { return &st.seen })
		}
	}
	return t, found, err
}

// tracedJobs is the job store as the worker sees it under -stages; it keeps
// batch completion.
type tracedJobs struct {
	jobStore
	bc backend.BatchCompleter
	tr *stageTracer
}

func (s *tracedJobs) Claim(ctx context.Context, p backend.ClaimParams) ([]backend.JobRow, error) {
	t0 := time.Now()
	jobs, err := s.jobStore.Claim(ctx, p)
	s.tr.calls.claim.add(len(jobs), time.Since(t0))
	for _, j := range jobs {
		s.tr.mark(j.TaskID, func(st *stageTimes) *time.Time { return &st.claimed })
	}
	return jobs, err
}

func (s *tracedJobs) CompleteBatch(ctx context.Context, items []backend.Completion) ([]bool, error) {
	t0 := time.Now()
	lost, err := s.bc.CompleteBatch(ctx, items)
	s.tr.calls.completeBatch.add(len(items), time.Since(t0))
	for _, it := range items {
		s.tr.mark(it.Lease.TaskID, func(st *stageTimes) *time.Time { return &st.committed })
	}
	return lost, err
}

// handled marks a job whose handler returned.
func (s *stageTracer) handled(id string) {
	s.mark(id, func(st *stageTimes) *time.Time { return &st.handled })
}

// created marks a task whose Enqueue returned.
func (s *stageTracer) created(id string) {
	s.mark(id, func(st *stageTimes) *time.Time { return &st.created })
}
