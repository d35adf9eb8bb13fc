package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/tracing"
)

// recordingExporter keeps the names of the spans of each export, and can
// hold an export until told to go on.
type recordingExporter struct {
	mu       sync.Mutex
	batches  [][]string
	shutdown bool
	err      error         // returned by every export
	entered  chan struct{} // if set, receives once per export, before it waits
	release  chan struct{} // if set, an export waits for it or for its context
	exported chan int      // if set, receives each export's size
}

func (e *recordingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.entered != nil {
		e.entered <- struct{}{}
	}
	if e.release != nil {
		select {
		case <-e.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	e.mu.Lock()
	e.batches = append(e.batches, names)
	e.mu.Unlock()
	if e.exported != nil {
		e.exported <- len(spans)
	}
	return e.err
}

func (e *recordingExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdown = true
	return nil
}

func (e *recordingExporter) got() ([][]string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.batches, e.shutdown
}

// endSpans ends n spans named prefix0, prefix1, … through a provider
// whose only processor is p.
func endSpans(tp trace.TracerProvider, prefix string, n int) {
	tr := tp.Tracer("test")
	for i := range n {
		_, s := tr.Start(context.Background(), fmt.Sprint(prefix, i))
		s.End()
	}
}

func newBatchProvider(t *testing.T, exp sdktrace.SpanExporter, opts tracing.BatchOptions, extra ...sdktrace.TracerProviderOption) (*sdktrace.TracerProvider, *tracing.BatchProcessor) {
	t.Helper()
	p, err := tracing.NewBatchProcessor(exp, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(p)}, extra...)...), p
}

func TestBatchProcessorExportsFullBatchesAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t)
	exp := &recordingExporter{exported: make(chan int, 4)}
	tp, _ := newBatchProvider(t, exp, tracing.BatchOptions{MaxQueueSize: 8, MaxExportBatchSize: 3, ScheduleDelay: time.Hour})
	endSpans(tp, "s", 7)
	for range 2 {
		select {
		case <-exp.exported:
		case <-time.After(10 * time.Second):
			t.Fatal("a full batch was not exported before ScheduleDelay")
		}
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	batches, shut := exp.got()
	want := [][]string{{"s0", "s1", "s2"}, {"s3", "s4", "s5"}, {"s6"}}
	if diff := cmp.Diff(want, batches); diff != "" {
		t.Errorf("exports (-want +got):\n%s", diff)
	}
	if !shut {
		t.Error("the exporter was not shut down")
	}
}

func TestBatchProcessorExportsAfterScheduleDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := &recordingExporter{}
		tp, _ := newBatchProvider(t, exp, tracing.BatchOptions{ScheduleDelay: time.Second})
		endSpans(tp, "s", 2)
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if b, _ := exp.got(); len(b) != 0 {
			t.Fatalf("exported %v before ScheduleDelay", b)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if diff := cmp.Diff([][]string{{"s0", "s1"}}, func() [][]string { b, _ := exp.got(); return b }()); diff != "" {
			t.Fatalf("exports after ScheduleDelay (-want +got):\n%s", diff)
		}
		endSpans(tp, "t", 1)
		time.Sleep(time.Second)
		synctest.Wait()
		if b, _ := exp.got(); len(b) != 2 {
			t.Fatalf("exports after a second delay: %v", b)
		}
		tp.Shutdown(context.Background())
	})
}

func TestBatchProcessorDropsWhenFull(t *testing.T) {
	defer goleak.VerifyNone(t)
	exp := &recordingExporter{entered: make(chan struct{}, 4), release: make(chan struct{})}
	var (
		mu       sync.Mutex
		reported []string
	)
	tp, p := newBatchProvider(t, exp, tracing.BatchOptions{MaxQueueSize: 2, MaxExportBatchSize: 2, ScheduleDelay: time.Hour,
		OnError: func(err error) { mu.Lock(); reported = append(reported, err.Error()); mu.Unlock() }})
	endSpans(tp, "a", 2)
	<-exp.entered // the goroutine holds a0 and a1 in an export
	endSpans(tp, "b", 3)
	if got := p.Dropped(); got != 1 {
		t.Errorf("Dropped = %d with a full queue, want 1", got)
	}
	close(exp.release)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	batches, _ := exp.got()
	if diff := cmp.Diff([][]string{{"a0", "a1"}, {"b0", "b1"}}, batches); diff != "" {
		t.Errorf("exports (-want +got):\n%s", diff)
	}
	mu.Lock()
	if diff := cmp.Diff([]string{"tracing: 1 spans dropped: the export queue (2 spans) was full"}, reported); diff != "" {
		t.Errorf("drops reported (-want +got):\n%s", diff)
	}
	mu.Unlock()
	late := tracetest.SpanStub{Name: "late", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})}
	p.OnEnd(late.Snapshot())
	if got := p.Dropped(); got != 2 {
		t.Errorf("Dropped = %d after a span ended past Shutdown, want 2", got)
	}
}

func TestBatchProcessorSkipsUnsampledSpans(t *testing.T) {
	defer goleak.VerifyNone(t)
	exp := &recordingExporter{}
	tp, p := newBatchProvider(t, exp, tracing.BatchOptions{}, sdktrace.WithSampler(sdktrace.NeverSample()))
	endSpans(tp, "s", 3)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := exp.got(); len(b) != 0 || p.Dropped() != 0 {
		t.Errorf("unsampled spans: exports %v, dropped %d", b, p.Dropped())
	}
}

func TestBatchProcessorBoundsExports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu       sync.Mutex
			reported []error
		)
		exp := &recordingExporter{release: make(chan struct{})} // never released
		tp, _ := newBatchProvider(t, exp, tracing.BatchOptions{
			MaxExportBatchSize: 1, ScheduleDelay: time.Hour, ExportTimeout: 3 * time.Second,
			OnError: func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() },
		})
		start := time.Now()
		endSpans(tp, "s", 1)
		synctest.Wait()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		mu.Lock()
		if len(reported) != 1 || !errors.Is(reported[0], context.DeadlineExceeded) {
			t.Fatalf("errors reported after ExportTimeout: %v", reported)
		}
		mu.Unlock()

		// Shutdown ends within its context even while an export hangs.
		endSpans(tp, "t", 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown with an export that hangs = %v, want a deadline error", err)
		}
		if d := time.Since(start); d != 4*time.Second {
			t.Errorf("Shutdown returned after %v, want 4s", d)
		}
		// The goroutine ends once the hanging export times out.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if _, shut := exp.got(); !shut {
			t.Error("the exporter was not shut down after the last export")
		}
	})
}

func TestBatchProcessorForceFlushReportsExportError(t *testing.T) {
	defer goleak.VerifyNone(t)
	exp := &recordingExporter{err: errors.New("collector said no")}
	tp, _ := newBatchProvider(t, exp, tracing.BatchOptions{ScheduleDelay: time.Hour, OnError: func(error) {}})
	endSpans(tp, "s", 2)
	err := tp.ForceFlush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "collector said no") {
		t.Errorf("ForceFlush = %v, want the export's error", err)
	}
	tp.Shutdown(context.Background())
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Errorf("ForceFlush after Shutdown = %v, want nil", err)
	}
}

func TestBatchProcessorConcurrentSpansAllAccounted(t *testing.T) {
	defer goleak.VerifyNone(t)
	exp := &countingExporter{}
	tp, p := newBatchProvider(t, exp, tracing.BatchOptions{MaxQueueSize: 64, MaxExportBatchSize: 16})
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() { endSpans(tp, fmt.Sprint(g, "-"), each) })
	}
	wg.Go(func() {
		for range 20 {
			tp.ForceFlush(context.Background())
		}
	})
	wg.Wait()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := exp.n.Load() + int64(p.Dropped()); got != goroutines*each {
		t.Errorf("exported %d + dropped %d = %d spans, want %d", exp.n.Load(), p.Dropped(), got, goroutines*each)
	}
}

func TestNewBatchProcessorValidatesOptions(t *testing.T) {
	tests := []struct {
		opts tracing.BatchOptions
		want string
	}{
		{tracing.BatchOptions{MaxQueueSize: -1}, "MaxQueueSize -1 is negative"},
		{tracing.BatchOptions{MaxExportBatchSize: -1}, "MaxExportBatchSize -1 is negative"},
		{tracing.BatchOptions{ScheduleDelay: -time.Second}, "ScheduleDelay -1s is negative"},
		{tracing.BatchOptions{ExportTimeout: -time.Second}, "ExportTimeout -1s is negative"},
		{tracing.BatchOptions{MaxQueueSize: 10, MaxExportBatchSize: 11}, "MaxExportBatchSize 11 exceeds MaxQueueSize 10"},
		{tracing.BatchOptions{MaxExportBatchSize: 4096}, "MaxExportBatchSize 4096 exceeds MaxQueueSize 2048"},
	}
	for _, tt := range tests {
		_, err := tracing.NewBatchProcessor(&countingExporter{}, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewBatchProcessor(%+v) = %v, want an error containing %q", tt.opts, err, tt.want)
		}
	}
	if _, err := tracing.NewBatchProcessor(nil, tracing.BatchOptions{}); err == nil {
		t.Error("NewBatchProcessor(nil exporter) succeeded")
	}
	// Bounds too large to allocate are bounds, not allocations: no panic,
	// here or in the exporting goroutine.
	huge, err := tracing.NewBatchProcessor(&countingExporter{}, tracing.BatchOptions{MaxQueueSize: math.MaxInt, MaxExportBatchSize: math.MaxInt})
	if err != nil {
		t.Fatalf("huge bounds: %v", err)
	}
	if err := huge.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	// A queue smaller than the default batch takes it as its batch size.
	p, err := tracing.NewBatchProcessor(&countingExporter{}, tracing.BatchOptions{MaxQueueSize: 100})
	if err != nil {
		t.Fatalf("a queue of 100 with the default batch size: %v", err)
	}
	p.Shutdown(context.Background())
}
