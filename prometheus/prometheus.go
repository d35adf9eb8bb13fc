// Package prometheus exports taskwire's metrics to Prometheus: the
// server's requests and tool calls (ServerMetrics, for server.Options),
// the worker runtime's jobs (WorkerMetrics, for worker.Options), a node's
// open listen streams and sessions (RegisterServerGauges), and a durable
// store's queue, read at scrape time (RegisterStoreGauges).
//
// It is the only taskwire package that imports the Prometheus client; the
// server, worker, task and store packages know only their own Metrics
// interfaces. Every label value is bounded by what the application
// configured (endpoint names, registered tools and job kinds) or by a
// closed set of constants (methods, outcomes, transitions, states, HTTP
// statuses): a task ID, principal, tenant, argument or error text never
// becomes a label.
//
// Register on a registry of your own (NewRegistry, or any
// prometheus.Registerer) and serve it with Handler, for example on the
// listener of package admin. docs/operations.md lists every metric.
package prometheus

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every metric name.
const namespace = "taskwire"

// Bucket bounds, in seconds, of the duration histograms: requestBuckets
// for requests and tool calls, from 1 ms to one minute (the default
// request deadline); jobBuckets for job handler runs, from 10 ms to one
// hour. They are never modified.
var (
	requestBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	jobBuckets     = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600}
)

// NewRegistry returns an empty registry with the Go runtime's and the
// process's collectors, for an application that does not keep one of its
// own. The taskwire metrics are added by the New and Register functions
// of this package.
func NewRegistry() *prom.Registry {
	reg := prom.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves the metrics of g in the Prometheus exposition formats. It
// answers at most four scrapes at once (more get HTTP 503) and bounds each
// to 10 s; a collector that fails (a store that does not answer) costs its
// own series, never the whole scrape.
func Handler(g prom.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             scrapeTimeout,
	})
}

// scrapeTimeout bounds one scrape: a store read of DefaultStoreTimeout
// with room to spare.
const scrapeTimeout = 10 * time.Second

// register registers every collector on reg, undoing the ones it
// registered when one fails.
func register(reg prom.Registerer, cs ...prom.Collector) error {
	if reg == nil {
		return errors.New("prometheus: nil Registerer")
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("prometheus: registering taskwire metrics: %w", err)
		}
	}
	return nil
}

// seconds converts d for a histogram.
func seconds(d time.Duration) float64 { return d.Seconds() }
