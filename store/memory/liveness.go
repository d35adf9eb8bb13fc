package memory

import (
	"context"
	"crypto/rand"
	"errors"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/backend"
)

// HoldInstance implements backend.LivenessRescuer, within the process: the
// Manager is the hold's only witness, so an instance is dead once its
// hold is closed. RescueDead takes the running jobs of closed holds, and
// of instances the Manager never held, in one pass.
func (s jobStore) HoldInstance(ctx context.Context) (backend.InstanceHold, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := s.m
	h := &instanceHold{m: m, id: rand.Text()}
	m.mu.Lock()
	if m.holds == nil {
		m.holds = map[string]bool{}
	}
	m.holds[h.id] = true
	m.mu.Unlock()
	return h, nil
}

// instanceHold is a memory backend.InstanceHold.
type instanceHold struct {
	m      *Manager
	id     string
	closed atomic.Bool
}

// ID implements backend.InstanceHold.
func (h *instanceHold) ID() string { return h.id }

// RescueDead implements backend.InstanceHold.
func (h *instanceHold) RescueDead(ctx context.Context, p backend.RescueParams) (int, error) {
	if h.closed.Load() {
		return 0, errors.New("memory: instance hold closed")
	}
	return h.m.rescue(ctx, p, func(j *job, _ time.Time) bool {
		return j.instance != "" && j.instance != h.id && !h.m.holds[j.instance]
	})
}

// Close implements backend.InstanceHold.
func (h *instanceHold) Close() error {
	if h.closed.Swap(true) {
		return nil
	}
	h.m.mu.Lock()
	delete(h.m.holds, h.id)
	h.m.mu.Unlock()
	return nil
}
