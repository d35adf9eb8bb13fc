package prometheus

import (
	"strconv"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestSeriesCacheCountsPastItsBound checks that a cached series is the
// vector's own, and that combinations past maxCachedSeries still count,
// looked up in the vector every time.
func TestSeriesCacheCountsPastItsBound(t *testing.T) {
	vec := prom.NewCounterVec(prom.CounterOpts{Name: "c", Help: "h"}, []string{"a", "b"})
	c := &seriesCache[prom.Counter]{make: func(l labels3) prom.Counter { return vec.WithLabelValues(l[0], l[1]) }}
	n := maxCachedSeries + 10
	for round := range 2 {
		for i := range n {
			c.get(labels3{strconv.Itoa(i), "x"}).Inc()
		}
		if got := c.n.Load(); got != maxCachedSeries {
			t.Fatalf("round %d: %d series cached, want %d", round, got, maxCachedSeries)
		}
	}
	for _, i := range []int{0, maxCachedSeries - 1, maxCachedSeries, n - 1} {
		var m dto.Metric
		if err := vec.WithLabelValues(strconv.Itoa(i), "x").Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetCounter().GetValue(); got != 2 {
			t.Errorf("series %d counted %v, want 2", i, got)
		}
	}
}
