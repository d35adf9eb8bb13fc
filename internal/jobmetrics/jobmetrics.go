// Package jobmetrics is a worker.Metrics sink for tests: it counts the
// runtime's job transitions and lets a test wait for one, through the
// runtime's real metrics hook rather than a stand-in of the runtime.
package jobmetrics

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/worker"
)

// AwaitTimeout bounds Await: a transition not counted by then fails the
// test.
const AwaitTimeout = 30 * time.Second

// Transitions counts job transitions. Its zero value is not usable; call
// New. It is safe for concurrent use.
type Transitions struct {
	mu     sync.Mutex
	counts map[worker.Transition]int
	change chan struct{}
}

var _ worker.Metrics = (*Transitions)(nil)

// New returns a Transitions with nothing counted.
func New() *Transitions {
	return &Transitions{counts: map[worker.Transition]int{}, change: make(chan struct{}, 1)}
}

// JobTransition counts tr and wakes Await.
func (m *Transitions) JobTransition(_ string, tr worker.Transition) {
	m.mu.Lock()
	m.counts[tr]++
	m.mu.Unlock()
	select {
	case m.change <- struct{}{}:
	default:
	}
}

// JobFailure ignores the failure.
func (m *Transitions) JobFailure(string, worker.FailureCategory) {}

// HandlerDuration ignores the duration.
func (m *Transitions) HandlerDuration(string, time.Duration) {}

// Maintenance ignores the pass.
func (m *Transitions) Maintenance(worker.Transition, int) {}

// Count returns how many times tr was counted.
func (m *Transitions) Count(tr worker.Transition) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[tr]
}

// Snapshot returns a copy of every count.
func (m *Transitions) Snapshot() map[worker.Transition]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.counts)
}

// Await waits until tr has been counted at least n times, and fails t
// when that takes longer than AwaitTimeout.
func (m *Transitions) Await(t testing.TB, tr worker.Transition, n int) {
	t.Helper()
	timeout := time.After(AwaitTimeout)
	for m.Count(tr) < n {
		select {
		case <-m.change:
		case <-timeout:
			t.Fatalf("transition %q counted %d times, want %d (all: %v)", tr, m.Count(tr), n, m.Snapshot())
		}
	}
}
