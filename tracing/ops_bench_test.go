package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/proccpu"
	"github.com/taskwire/taskwire/mcp"
	twprom "github.com/taskwire/taskwire/prometheus"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/tracing"
	"github.com/taskwire/taskwire/worker"
)

// opsVariants are the operations configurations the Ops benchmarks
// compare: nothing, Prometheus metrics, OpenTelemetry tracing (a
// BatchProcessor, as the taskwire command uses, feeding an exporter that
// discards), both, and tracing through the SDK's own batch span processor
// instead, for comparison.
var opsVariants = []struct {
	name             string
	metrics, tracing bool
	sdkBatcher       bool
}{
	{"off", false, false, false},
	{"metrics", true, false, false},
	{"tracing", false, true, false},
	{"both", true, true, false},
	{"sdkbatch", false, true, true},
}

// benchTracer returns a Tracer over benchProvider's provider, and its
// function that fails b unless spans were exported.
func benchTracer(b *testing.B, sdkBatcher bool) (*tracing.Tracer, func()) {
	b.Helper()
	tp, exported := benchProvider(b, sdkBatcher)
	tr, err := tracing.New(tracing.Options{Provider: tp})
	if err != nil {
		b.Fatal(err)
	}
	return tr, exported
}

// benchProvider returns a batching provider whose exporter discards (and
// counts) spans, shut down when b ends, and a function that fails b
// unless spans were exported. The provider batches with a BatchProcessor,
// or with the SDK's batch span processor if sdkBatcher is set.
func benchProvider(b *testing.B, sdkBatcher bool) (*sdktrace.TracerProvider, func()) {
	b.Helper()
	exp := &countingExporter{}
	batcher := sdktrace.WithBatcher(exp)
	if !sdkBatcher {
		bp, err := tracing.NewBatchProcessor(exp, tracing.BatchOptions{})
		if err != nil {
			b.Fatal(err)
		}
		batcher = sdktrace.WithSpanProcessor(bp)
	}
	tp := sdktrace.NewTracerProvider(batcher)
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp, func() {
		tp.ForceFlush(context.Background())
		// Both processors drop spans when their queue is full, so
		// most, not all, are exported under load.
		if exp.n.Load() == 0 {
			b.Fatal("no span exported")
		}
	}
}

// BenchmarkToolsCallOps compares an inline 2026-07-28 tools/call of an
// echo tool, the request carrying a traceparent, under each of
// opsVariants: over loopback HTTP with four parallel clients per core
// (req/s) and in process (ServeHTTP with a recorder). Run each variant in
// a process of its own, in rounds of rotating order, and compare them with
// benchstat -col /ops (docs/benchmarks.md):
//
//	go test -c -o ops.test ./tracing
//	bash scripts/benchrotate.sh ./ops.test 16 'ToolsCallOps/mode=http/' 1500ms off metrics tracing both > http.txt
//	benchstat -col /ops http.txt
func BenchmarkToolsCallOps(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	header := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"},
		"Mcp-Method":           {"tools/call"},
		"Mcp-Name":             {"echo"},
		"Traceparent":          {clientHeader},
	}
	for _, mode := range []string{"http", "inprocess"} {
		for _, v := range opsVariants {
			b.Run("mode="+mode+"/ops="+v.name, func(b *testing.B) {
				var (
					opts     server.Options
					reg      *prom.Registry
					exported = func() {}
				)
				if v.metrics {
					reg = twprom.NewRegistry()
					m, err := twprom.NewServerMetrics(reg)
					if err != nil {
						b.Fatal(err)
					}
					opts.Metrics, opts.Observer = m, m.Observer()
				}
				if v.tracing {
					opts.Tracer, exported = benchTracer(b, v.sdkBatcher)
				}
				srv := newEchoServer(b, opts)
				if mode == "http" {
					benchHTTP(b, srv, body, header)
				} else {
					benchInProcess(b, srv, body, header)
				}
				exported()
				if reg != nil {
					if got, _ := scrapeCounter(b, reg, "taskwire_server_tool_calls_total"); got < float64(b.N) {
						b.Fatalf("%v tool calls counted, want at least %d", got, b.N)
					}
				}
			})
		}
	}
}

// benchHTTP posts body with header to srv over loopback HTTP from
// parallel clients, reporting req/s.
func benchHTTP(b *testing.B, srv http.Handler, body []byte, header http.Header) {
	hs := httptest.NewServer(srv)
	defer hs.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	b.SetParallelism(4)
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", bytes.NewReader(body))
			req.Header = header.Clone()
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Errorf("status %d", res.StatusCode)
				return
			}
		}
	})
	cpu.report(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// benchInProcess serves body with header through srv.ServeHTTP.
func benchInProcess(b *testing.B, srv http.Handler, body []byte, header http.Header) {
	b.ReportAllocs()
	cpu := startCPU()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", bytes.NewReader(body))
		r.Header = header.Clone()
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	b.StopTimer()
	cpu.report(b)
}

// cpuMeter measures the CPU time of this whole process (every goroutine:
// server, clients, span and metric work, garbage collection) over a
// benchmark, which other processes on the machine disturb less than the
// wall time.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	d, ok := proccpu.Used()
	return cpuMeter{d, ok}
}

// report adds the process CPU time per operation to b's results, as
// cpu-ns/op.
func (m cpuMeter) report(b *testing.B) {
	if d, ok := proccpu.Used(); ok && m.ok && b.N > 0 {
		b.ReportMetric(float64(d-m.start)/float64(b.N), "cpu-ns/op")
	}
}

// scrapeCounter returns the sum of the counter family name on reg.
func scrapeCounter(b *testing.B, reg *prom.Registry, name string) (float64, bool) {
	b.Helper()
	fams, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
		return sum, true
	}
	return 0, false
}

// opsJobKind is the job kind of BenchmarkWorkerOps.
const opsJobKind = "bench_job"

// completions is a worker.Metrics that counts completed jobs, closing done
// at target, and passes every call on to next when set.
type completions struct {
	next   worker.Metrics
	target int64
	n      atomic.Int64
	done   chan struct{}
}

func (c *completions) JobTransition(kind string, t worker.Transition) {
	if c.next != nil {
		c.next.JobTransition(kind, t)
	}
	if t == worker.TransitionCompleted && c.n.Add(1) == c.target {
		close(c.done)
	}
}

func (c *completions) JobFailure(kind string, f worker.FailureCategory) {
	if c.next != nil {
		c.next.JobFailure(kind, f)
	}
}

func (c *completions) HandlerDuration(kind string, d time.Duration) {
	if c.next != nil {
		c.next.HandlerDuration(kind, d)
	}
}

func (c *completions) Maintenance(t worker.Transition, n int) {
	if c.next != nil {
		c.next.Maintenance(t, n)
	}
}

// BenchmarkWorkerOps measures durable jobs per second on a SQLite file
// under each of opsVariants: b.N tasks (each keeping the trace context of
// a creating request, as a traced API node stores it) are enqueued before
// the timer starts, then a worker runtime with a no-op handler completes
// them all. Use a fixed count and run each variant in a process of its
// own, in rounds of rotating order (docs/benchmarks.md):
//
//	bash scripts/benchrotate.sh ./ops.test 12 'WorkerOps/' 5000x off metrics tracing both > worker.txt
//	benchstat -col /ops worker.txt
func BenchmarkWorkerOps(b *testing.B) {
	for _, v := range opsVariants {
		b.Run("ops="+v.name, func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(b.TempDir(), "tasks.db"), Synchronous: "NORMAL", Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			cc := opsCreation(b)
			for range b.N {
				if _, err := st.Enqueue(ctx, cc, backend.EnqueueOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			m := &completions{target: int64(b.N), done: make(chan struct{})}
			opts := worker.Options{Store: st.Jobs(), Events: st.EventPublisher(), Name: "bench",
				PollInterval: 50 * time.Millisecond, ShutdownGrace: 5 * time.Second, Logger: quiet, Metrics: m}
			if v.metrics {
				if m.next, err = twprom.NewWorkerMetrics(twprom.NewRegistry()); err != nil {
					b.Fatal(err)
				}
			}
			exported := func() {}
			if v.tracing {
				opts.Tracer, exported = benchTracer(b, v.sdkBatcher)
			}
			rt, err := worker.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			result := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
			if err := rt.AddRawHandler(opsJobKind, func(context.Context, *worker.Job) (*mcp.CallToolResult, error) {
				return result, nil
			}); err != nil {
				b.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			b.ResetTimer()
			cpu := startCPU()
			runErr := make(chan error, 1)
			go func() { runErr <- rt.Run(runCtx) }()
			select {
			case <-m.done:
			case err := <-runErr:
				b.Fatalf("worker stopped: %v", err)
			case <-time.After(5 * time.Minute):
				b.Fatalf("%d of %d jobs completed within 5 minutes", m.n.Load(), b.N)
			}
			b.StopTimer()
			cpu.report(b)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			stop()
			if err := <-runErr; err != nil {
				b.Fatalf("worker Run: %v", err)
			}
			exported()
		})
	}
}

// opsCreation returns the creation context of BenchmarkWorkerOps's
// tasks.
func opsCreation(b *testing.B) *task.CreationContext {
	b.Helper()
	args, _ := json.Marshal(map[string]int{"n": 1})
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: mcp.LatestProtocolVersion, Endpoint: "bench",
		Operation: mcp.MethodToolsCall, Tool: opsJobKind, Arguments: args})
	if err != nil {
		b.Fatal(err)
	}
	return &task.CreationContext{
		Request: task.RequestContext{Endpoint: "bench", Tenant: "bench", Principal: "bench", ProtocolVersion: mcp.LatestProtocolVersion},
		Origin:  o,
		Trace:   task.TraceContext{Traceparent: clientHeader},
	}
}

// BenchmarkRequestSpan measures what a traced request adds by itself: a
// request span started and ended by the Tracer, from parallel goroutines,
// batched by a BatchProcessor or by the SDK's batch span processor
// (sdkbatch) into an exporter that discards. It floods the processor with
// spans, so it does not show the SDK processor's goroutine wake-up per
// span, which only spans spaced out in time pay (BenchmarkToolsCallOps
// does).
//
// The sdkfloor variant makes the same span with the OpenTelemetry API
// alone, as any instrumentation would at the least: the client's
// traceparent extracted, a server span started, the six attributes of an
// inline tools/call made and set in one call, the span ended, through a
// BatchProcessor. The difference between batchprocessor and sdkfloor is
// what the Tracer's own code costs.
func BenchmarkRequestSpan(b *testing.B) {
	req := server.TracedRequest{
		Info:            server.RequestInfo{Method: "tools/call", Endpoint: "tools"},
		ProtocolVersion: "2026-07-28",
		Incoming:        task.TraceContext{Traceparent: clientHeader},
	}
	ctx := context.Background()
	for _, name := range []string{"batchprocessor", "sdkbatch"} {
		b.Run(name, func(b *testing.B) {
			tr, exported := benchTracer(b, name == "sdkbatch")
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, s := tr.StartRequest(ctx, req)
					s.End(server.FinishedRequest{Outcome: server.OutcomeComplete, Tool: "echo"})
				}
			})
			exported()
		})
	}
	b.Run("sdkfloor", func(b *testing.B) {
		tp, exported := benchProvider(b, false)
		tracer := tp.Tracer("floor")
		var prop propagation.TraceContext
		kind := trace.WithSpanKind(trace.SpanKindServer)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			carrier := propagation.MapCarrier{"traceparent": clientHeader}
			for pb.Next() {
				_, span := tracer.Start(prop.Extract(ctx, carrier), "mcp tools/call", kind)
				span.SetAttributes(
					attribute.String(tracing.AttrMethod, req.Info.Method),
					attribute.String(tracing.AttrEndpoint, req.Info.Endpoint),
					attribute.String(tracing.AttrProtocolVersion, req.ProtocolVersion),
					attribute.String(tracing.AttrEra, tracing.Era2026),
					attribute.String(tracing.AttrOutcome, string(server.OutcomeComplete)),
					attribute.String(tracing.AttrTool, "echo"))
				span.End()
			}
		})
		exported()
	})
}
