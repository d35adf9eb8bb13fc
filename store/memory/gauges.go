package memory

import (
	"context"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

var _ backend.QueueGaugeSource = (*Manager)(nil)

// Gauges implements backend.GaugeSource, so that prometheus.RegisterStoreGauges
// reports this backend as it reports the durable stores: tasks by status
// (expired ones included until they are deleted), the unfinished jobs of
// unexpired tasks by kind and state, how long the longest-waiting due job
// has been due by Options.Now, and the live sessions of Sessions. It reads
// every task under the manager's lock, so its cost grows with the tasks
// held (at most Options.Capacity), and fails only when ctx is done.
func (m *Manager) Gauges(ctx context.Context) (backend.Gauges, error) {
	return m.gauges(ctx, true)
}

// QueueGauges implements backend.QueueGaugeSource: Gauges with Tasks nil.
func (m *Manager) QueueGauges(ctx context.Context) (backend.Gauges, error) {
	return m.gauges(ctx, false)
}

func (m *Manager) gauges(ctx context.Context, tasks bool) (backend.Gauges, error) {
	if err := ctx.Err(); err != nil {
		return backend.Gauges{}, err
	}
	snap := backend.Gauges{Jobs: map[backend.JobKey]int{}}
	if tasks {
		snap.Tasks = map[task.Status]int{}
	}
	m.mu.Lock()
	now := m.now()
	for _, e := range m.tasks {
		if tasks {
			snap.Tasks[e.snap.Status()]++
		}
		j := e.job
		if j == nil || j.state == jobDone || e.expired(now) {
			continue
		}
		state := j.gaugeState(now)
		snap.Jobs[backend.JobKey{Queue: j.queue, Kind: j.kind, State: state}]++
		if due := now.Sub(j.runAt); state == backend.JobAvailable && due > snap.OldestAvailable {
			snap.OldestAvailable = due
		}
	}
	m.mu.Unlock()
	snap.Sessions = m.sessions.CountLive(now)
	return snap, nil
}

// gaugeState is the state an unfinished job is reported in at now.
func (j *job) gaugeState(now time.Time) backend.JobState {
	switch {
	case j.state == jobRunning:
		return backend.JobRunning
	case j.state == jobAwaiting:
		return backend.JobInputWaiting
	case j.runAt.After(now) && j.failures > 0:
		return backend.JobRetryWaiting
	case j.runAt.After(now):
		return backend.JobScheduled
	}
	return backend.JobAvailable
}
