package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/tracing"
	"github.com/taskwire/taskwire/worker"
)

// spans is an in-memory exporter that also reports every span that ends,
// so that tests wait on a channel rather than a timer.
type spans struct {
	*tracetest.InMemoryExporter
	ended chan sdktrace.ReadOnlySpan
}

// newSpans returns a provider exporting synchronously into a spans, shut
// down when t ends.
func newSpans(t *testing.T) (*sdktrace.TracerProvider, *spans) {
	s := &spans{InMemoryExporter: tracetest.NewInMemoryExporter(), ended: make(chan sdktrace.ReadOnlySpan, 64)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(s.InMemoryExporter), sdktrace.WithSpanProcessor(endNotifier(s.ended)))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp, s
}

// newTracer returns a Tracer configured by opts over a provider of its
// own, and the spans it ends.
func newTracer(t *testing.T, opts tracing.Options) (*tracing.Tracer, *spans) {
	t.Helper()
	tp, sp := newSpans(t)
	opts.Provider = tp
	tr, err := tracing.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tr, sp
}

// await returns the next span named name that ends, failing t after 10 s.
func (s *spans) await(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case sp := <-s.ended:
			if sp.Name() == name {
				return sp
			}
		case <-timeout:
			t.Fatalf("no span %q ended within 10 s", name)
		}
	}
}

// endNotifier is a span processor that sends every ended span, dropping
// it when the channel is full.
type endNotifier chan sdktrace.ReadOnlySpan

func (n endNotifier) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (n endNotifier) OnEnd(s sdktrace.ReadOnlySpan) {
	select {
	case n <- s:
	default:
	}
}
func (n endNotifier) Shutdown(context.Context) error   { return nil }
func (n endNotifier) ForceFlush(context.Context) error { return nil }

// Echo is the durable tool of the tests.
type EchoIn struct {
	Text string `json:"text"`
}

type EchoOut struct {
	Text string `json:"text"`
}

// The durable tools of the tests.
const (
	toolEcho  = "echo.later"
	toolFlaky = "flaky.later"
)

func echoTools() *durable.Set {
	var s durable.Set
	durable.Add(&s, durable.Tool[EchoIn, EchoOut]{
		Tool: &mcp.Tool{Name: toolEcho, Description: "Echo the text, later."},
		Run: func(ctx context.Context, job *worker.Job, in EchoIn) (EchoOut, error) {
			return EchoOut(in), nil
		},
	})
	durable.Add(&s, durable.Tool[EchoIn, EchoOut]{
		Tool: &mcp.Tool{Name: toolFlaky, Description: "Fail once, then ask for a colour."},
		Run: func(ctx context.Context, job *worker.Job, in EchoIn) (EchoOut, error) {
			if job.Failures() == 0 {
				if err := job.ReportProgress("halfway", 1, 2); err != nil {
					return EchoOut{}, err
				}
				return EchoOut{}, errors.New("the first run fails")
			}
			_, err := job.Ask(ctx, "colour", mcp.NewElicitFormRequest("Which colour?",
				json.RawMessage(`{"type":"object","properties":{"c":{"type":"string"}}}`)))
			return EchoOut{}, err
		},
		TaskOptions: durable.TaskOptions{TaskInput: []string{task.InputElicitationForm}},
	})
	return &s
}

// api is an API node: a server with the durable tool over st, traced by
// opts (whose Provider is set here).
type api struct {
	srv    *server.Server
	client *mcptest.Client
	spans  *spans
}

func newAPI(t *testing.T, st backend.Store, opts tracing.Options) *api {
	t.Helper()
	tr, sp := newTracer(t, opts)
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "traced", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion}})
	if err := echoTools().Serve(ep, st); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: st,
		Admission: server.DevAdmission(), Tracer: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := mcptest.NewClient(srv, "/mcp")
	c.Header = http.Header{"Authorization": {"Bearer alice"}}
	c.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: mcp.Object{}}}
	c.DeclareTasks()
	return &api{srv: srv, client: c, spans: sp}
}

// createTask calls the durable tool and returns the task's ID.
func (a *api) createTask(t *testing.T, text string, header http.Header) string {
	t.Helper()
	return a.createTaskOf(t, toolEcho, text, header)
}

// createTaskOf calls the named durable tool and returns the task's ID.
func (a *api) createTaskOf(t *testing.T, tool, text string, header http.Header) string {
	t.Helper()
	saved := a.client.Header
	a.client.Header = saved.Clone()
	for k, v := range header {
		a.client.Header[k] = v
	}
	defer func() { a.client.Header = saved }()
	r, err := a.client.CallTool(t.Context(), tool, map[string]any{"text": text})
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.TaskHandle()
	if err != nil {
		t.Fatalf("tools/call: %v (%s)", err, r.Body)
	}
	return h.TaskID
}

// startWorker runs a worker runtime over jobs, traced by its own
// provider (as another process would be), until t ends.
func startWorker(t *testing.T, st backend.Store, opts tracing.Options) *spans {
	t.Helper()
	tr, sp := newTracer(t, opts)
	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher(), Tracer: tr,
		PollInterval: 20 * time.Millisecond, Backoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	if err := echoTools().Work(rt); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rt.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return sp
}

// openSQLite opens the SQLite store at path, closed when t ends.
func openSQLite(t *testing.T, path string) backend.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: path, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// twoSQLiteHandles returns two stores opened separately on one new file:
// an API node's and a worker's.
func twoSQLiteHandles(t *testing.T) (backend.Store, backend.Store) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	return openSQLite(t, path), openSQLite(t, path)
}

// twoPostgresHandles returns two stores opened separately on one new
// schema.
func twoPostgresHandles(t *testing.T) (backend.Store, backend.Store) {
	url := pgtest.URL(t)
	schema := pgtest.Schema(t, url, "tracing")
	open := func() backend.Store {
		st, err := postgres.Open(context.Background(), postgres.Options{URL: url, Schema: schema, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	return open(), open()
}

// quiet discards the stores' logs.
var quiet = slog.New(slog.DiscardHandler)

// attrs returns a span's attributes by key.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}
