package prometheus

import (
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/taskwire/taskwire/worker"
)

// WorkerMetrics implements worker.Metrics; set it as worker.Options.Metrics.
// Build it with NewWorkerMetrics. It is safe for concurrent use and never
// blocks.
type WorkerMetrics struct {
	transitions *prom.CounterVec
	failures    *prom.CounterVec
	durations   *prom.HistogramVec
	maintenance *prom.CounterVec
	running     *prom.GaugeVec

	// Series by label values, looked up once per combination.
	transitionSeries *seriesCache[prom.Counter]
	durationSeries   *seriesCache[prom.Observer]
}

var (
	_ worker.Metrics      = (*WorkerMetrics)(nil)
	_ worker.QueueMetrics = (*WorkerMetrics)(nil)
)

// NewWorkerMetrics registers the worker runtime's metrics on reg. It fails
// when reg is nil or already holds metrics of the same names.
func NewWorkerMetrics(reg prom.Registerer) (*WorkerMetrics, error) {
	m := &WorkerMetrics{
		transitions: prom.NewCounterVec(prom.CounterOpts{
			Namespace: namespace, Subsystem: "worker", Name: "job_transitions_total",
			Help: "Job transitions made by this runtime, by job kind and transition (claimed, completed, failed, cancelled, retried, input_requested, released, lease_lost).",
		}, []string{"kind", "transition"}),
		failures: prom.NewCounterVec(prom.CounterOpts{
			Namespace: namespace, Subsystem: "worker", Name: "job_failures_total",
			Help: "Handler runs that failed, retried or not, by job kind and category.",
		}, []string{"kind", "category"}),
		durations: prom.NewHistogramVec(prom.HistogramOpts{
			Namespace: namespace, Subsystem: "worker", Name: "job_duration_seconds",
			Help:    "Wall time of job handler runs, by job kind.",
			Buckets: jobBuckets,
		}, []string{"kind"}),
		maintenance: prom.NewCounterVec(prom.CounterOpts{
			Namespace: namespace, Subsystem: "worker", Name: "maintenance_total",
			Help: "Jobs, tasks or rows handled by maintenance passes, by operation (rescued, expired_deleted, outbox_pruned, job_pruned).",
		}, []string{"operation"}),
		running: prom.NewGaugeVec(prom.GaugeOpts{
			Namespace: namespace, Subsystem: "worker", Name: "queue_running_jobs",
			Help: "Jobs running in this runtime, by queue (the queues it serves, at most worker.MaxQueues).",
		}, []string{"queue"}),
	}
	if err := register(reg, m.transitions, m.failures, m.durations, m.maintenance, m.running); err != nil {
		return nil, err
	}
	m.transitionSeries = &seriesCache[prom.Counter]{make: func(l labels3) prom.Counter { return m.transitions.WithLabelValues(l[0], l[1]) }}
	m.durationSeries = &seriesCache[prom.Observer]{make: func(l labels3) prom.Observer { return m.durations.WithLabelValues(l[0]) }}
	return m, nil
}

// JobTransition implements worker.Metrics.
func (m *WorkerMetrics) JobTransition(kind string, t worker.Transition) {
	m.transitionSeries.get(labels3{kind, string(t)}).Inc()
}

// JobFailure implements worker.Metrics.
func (m *WorkerMetrics) JobFailure(kind string, c worker.FailureCategory) {
	m.failures.WithLabelValues(kind, string(c)).Inc()
}

// HandlerDuration implements worker.Metrics.
func (m *WorkerMetrics) HandlerDuration(kind string, d time.Duration) {
	m.durationSeries.get(labels3{kind}).Observe(seconds(d))
}

// Maintenance implements worker.Metrics.
func (m *WorkerMetrics) Maintenance(t worker.Transition, n int) {
	m.maintenance.WithLabelValues(string(t)).Add(float64(n))
}

// QueueRunning implements worker.QueueMetrics.
func (m *WorkerMetrics) QueueRunning(queue string, delta int) {
	m.running.WithLabelValues(queue).Add(float64(delta))
}
