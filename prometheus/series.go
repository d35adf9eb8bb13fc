package prometheus

import (
	"sync"
	"sync/atomic"

	prom "github.com/prometheus/client_golang/prometheus"
)

// maxCachedSeries bounds the label combinations a seriesCache keeps. The
// labels are bounded already (registered endpoints and tools, protocol
// methods, outcomes), so the bound is only a backstop: past it, lookups
// go to the vectors every time, as without a cache.
const maxCachedSeries = 4096

// labels3 is a combination of up to three label values.
type labels3 [3]string

// seriesCache keeps, for each label combination seen, the series a
// metric's vectors hold for it, so that a hot path looks them up once
// rather than hashing its labels into every vector on every call. The
// vectors are never reset or pruned, so a cached series stays the one
// WithLabelValues would return.
type seriesCache[S any] struct {
	m    sync.Map // labels3 → S
	n    atomic.Int32
	make func(labels3) S
}

// get returns the series of l, made by c.make on first use.
func (c *seriesCache[S]) get(l labels3) S {
	if v, ok := c.m.Load(l); ok {
		return v.(S)
	}
	s := c.make(l)
	if c.n.Load() < maxCachedSeries {
		if _, loaded := c.m.LoadOrStore(l, s); !loaded {
			c.n.Add(1)
		}
	}
	return s
}

// finishedSeries are the series one finished request (or tool call)
// updates: its count by outcome and its duration.
type finishedSeries struct {
	count    prom.Counter
	duration prom.Observer
}

// newFinishedCache returns a cache of the series of counts, labelled by
// (a, b, outcome), and durations, labelled by (a, b).
func newFinishedCache(counts *prom.CounterVec, durations *prom.HistogramVec) *seriesCache[finishedSeries] {
	return &seriesCache[finishedSeries]{make: func(l labels3) finishedSeries {
		return finishedSeries{count: counts.WithLabelValues(l[0], l[1], l[2]), duration: durations.WithLabelValues(l[0], l[1])}
	}}
}
