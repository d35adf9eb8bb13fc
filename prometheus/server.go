package prometheus

import (
	"context"
	"strconv"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/taskwire/taskwire/server"
)

// ServerMetrics implements server.Metrics and server.ToolMetrics; set it as
// server.Options.Metrics, and Observer() as server.Options.Observer for
// the in-flight gauge. Build it with NewServerMetrics. It is safe for
// concurrent use and never blocks.
type ServerMetrics struct {
	requests     *prom.CounterVec
	durations    *prom.HistogramVec
	inFlight     *prom.GaugeVec
	rejections   *prom.CounterVec
	toolCalls    *prom.CounterVec
	toolDuration *prom.HistogramVec

	// Series by label values, looked up once per combination.
	finished, toolFinished *seriesCache[finishedSeries]
	inFlightSeries         *seriesCache[prom.Gauge]
}

var (
	_ server.Metrics     = (*ServerMetrics)(nil)
	_ server.ToolMetrics = (*ServerMetrics)(nil)
)

// NewServerMetrics registers the server's request metrics on reg. It fails
// when reg is nil or already holds metrics of the same names.
func NewServerMetrics(reg prom.Registerer) (*ServerMetrics, error) {
	m := &ServerMetrics{
		requests: prom.NewCounterVec(prom.CounterOpts{
			Namespace: namespace, Subsystem: "server", Name: "requests_total",
			Help: "Admitted MCP requests that finished, by endpoint, method and outcome.",
		}, []string{"endpoint", "method", "outcome"}),
		durations: prom.NewHistogramVec(prom.HistogramOpts{
			Namespace: namespace, Subsystem: "server", Name: "request_duration_seconds",
			Help:    "Wall time of admitted MCP requests, from admission to the response, by endpoint and method.",
			Buckets: requestBuckets,
		}, []string{"endpoint", "method"}),
		inFlight: prom.NewGaugeVec(prom.GaugeOpts{
			Namespace: namespace, Subsystem: "server", Name: "requests_in_flight",
			Help: "Admitted MCP requests running now, by endpoint and method.",
		}, []string{"endpoint", "method"}),
		rejections: prom.NewCounterVec(prom.CounterOpts{
			Namespace: namespace, Subsystem: "server", Name: "rejections_total",
			Help: "Requests refused before admission (headers, versions, origins, admission), by endpoint and HTTP status.",
		}, []string{"endpoint", "status"}),
		toolCalls: prom.NewCounterVec(prom.CounterOpts{
			Namespace: namespace, Subsystem: "server", Name: "tool_calls_total",
			Help: "Admitted tools/call requests that finished, by endpoint, registered tool and outcome.",
		}, []string{"endpoint", "tool", "outcome"}),
		toolDuration: prom.NewHistogramVec(prom.HistogramOpts{
			Namespace: namespace, Subsystem: "server", Name: "tool_call_duration_seconds",
			Help:    "Wall time of admitted tools/call requests, by endpoint and registered tool.",
			Buckets: requestBuckets,
		}, []string{"endpoint", "tool"}),
	}
	if err := register(reg, m.requests, m.durations, m.inFlight, m.rejections, m.toolCalls, m.toolDuration); err != nil {
		return nil, err
	}
	m.finished = newFinishedCache(m.requests, m.durations)
	m.toolFinished = newFinishedCache(m.toolCalls, m.toolDuration)
	m.inFlightSeries = &seriesCache[prom.Gauge]{make: func(l labels3) prom.Gauge { return m.inFlight.WithLabelValues(l[0], l[1]) }}
	return m, nil
}

// RequestFinished implements server.Metrics.
func (m *ServerMetrics) RequestFinished(info server.RequestInfo, outcome server.Outcome, elapsed time.Duration) {
	s := m.finished.get(labels3{info.Endpoint, info.Method, string(outcome)})
	s.count.Inc()
	s.duration.Observe(seconds(elapsed))
}

// RequestRejected implements server.Metrics.
func (m *ServerMetrics) RequestRejected(endpoint string, status int) {
	m.rejections.WithLabelValues(endpoint, statusLabel(status)).Inc()
}

// ToolCallFinished implements server.ToolMetrics.
func (m *ServerMetrics) ToolCallFinished(info server.ToolCallInfo, outcome server.Outcome, elapsed time.Duration) {
	s := m.toolFinished.get(labels3{info.Endpoint, info.Tool, string(outcome)})
	s.count.Inc()
	s.duration.Observe(seconds(elapsed))
}

// Observer returns the server.Observer that keeps
// taskwire_server_requests_in_flight.
func (m *ServerMetrics) Observer() server.Observer { return inFlightObserver{m.inFlightSeries} }

type inFlightObserver struct{ g *seriesCache[prom.Gauge] }

func (o inFlightObserver) RequestStarted(_ context.Context, info server.RequestInfo) {
	o.g.get(labels3{info.Endpoint, info.Method}).Inc()
}

func (o inFlightObserver) RequestFinished(_ context.Context, info server.RequestInfo, _ server.Outcome, _ time.Duration) {
	o.g.get(labels3{info.Endpoint, info.Method}).Dec()
}

// statusLabel bounds the status label to the HTTP status codes.
func statusLabel(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status)
}

// ServerGaugeSource is what RegisterServerGauges reads: *server.Server.
type ServerGaugeSource interface {
	Gauges() server.Gauges
}

// RegisterServerGauges registers, on reg, gauges of src read at every
// scrape: taskwire_server_listen_streams and taskwire_server_live_sessions.
// It fails when reg or src is nil or reg holds metrics of the same names.
func RegisterServerGauges(reg prom.Registerer, src ServerGaugeSource) error {
	if src == nil {
		return errNilSource
	}
	return register(reg, serverGauges{src: src})
}

var (
	listenStreamsDesc = prom.NewDesc(namespace+"_server_listen_streams",
		"subscriptions/listen streams open or being opened on this node.", nil, nil)
	liveSessionsDesc = prom.NewDesc(namespace+"_server_live_sessions",
		"2025-era sessions holding state on this node (a GET stream, resource subscriptions or requests in flight).", nil, nil)
)

type serverGauges struct{ src ServerGaugeSource }

func (serverGauges) Describe(ch chan<- *prom.Desc) {
	ch <- listenStreamsDesc
	ch <- liveSessionsDesc
}

func (c serverGauges) Collect(ch chan<- prom.Metric) {
	g := c.src.Gauges()
	ch <- prom.MustNewConstMetric(listenStreamsDesc, prom.GaugeValue, float64(g.ListenStreams))
	ch <- prom.MustNewConstMetric(liveSessionsDesc, prom.GaugeValue, float64(g.LiveSessions))
}
