package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults of BatchOptions, those of the OpenTelemetry specification's
// batch span processor.
const (
	DefaultMaxQueueSize       = 2048
	DefaultMaxExportBatchSize = 512
	DefaultScheduleDelay      = 5 * time.Second
	DefaultExportTimeout      = 30 * time.Second
)

// BatchOptions configure a BatchProcessor. A zero field takes its
// default.
type BatchOptions struct {
	// MaxQueueSize bounds the ended spans held for export; a span that
	// ends while the queue is full is dropped and counted (Dropped).
	// Default DefaultMaxQueueSize.
	MaxQueueSize int
	// MaxExportBatchSize bounds the spans of one export, and a queue
	// that reaches it is exported without waiting for ScheduleDelay. At
	// most MaxQueueSize; default DefaultMaxExportBatchSize (or
	// MaxQueueSize if that is smaller).
	MaxExportBatchSize int
	// ScheduleDelay is the longest a span waits for an export of a queue
	// that has not reached MaxExportBatchSize. Default
	// DefaultScheduleDelay.
	ScheduleDelay time.Duration
	// ExportTimeout bounds each call of the exporter. Default
	// DefaultExportTimeout.
	ExportTimeout time.Duration
	// OnError receives the errors of exports that run in the background
	// (ForceFlush and Shutdown return theirs), and after an export that
	// follows dropped spans an error saying how many were dropped since the
	// last such report. Default otel.Handle, the OpenTelemetry error
	// handler.
	OnError func(error)
}

// withDefaults validates o and fills in its defaults.
func (o BatchOptions) withDefaults() (BatchOptions, error) {
	var errs []error
	if o.MaxQueueSize < 0 {
		errs = append(errs, fmt.Errorf("MaxQueueSize %d is negative", o.MaxQueueSize))
	}
	if o.MaxExportBatchSize < 0 {
		errs = append(errs, fmt.Errorf("MaxExportBatchSize %d is negative", o.MaxExportBatchSize))
	}
	if o.ScheduleDelay < 0 {
		errs = append(errs, fmt.Errorf("ScheduleDelay %v is negative", o.ScheduleDelay))
	}
	if o.ExportTimeout < 0 {
		errs = append(errs, fmt.Errorf("ExportTimeout %v is negative", o.ExportTimeout))
	}
	if o.MaxQueueSize == 0 {
		o.MaxQueueSize = DefaultMaxQueueSize
	}
	if o.MaxExportBatchSize == 0 {
		o.MaxExportBatchSize = min(DefaultMaxExportBatchSize, o.MaxQueueSize)
	}
	if o.MaxQueueSize > 0 && o.MaxExportBatchSize > o.MaxQueueSize {
		errs = append(errs, fmt.Errorf("MaxExportBatchSize %d exceeds MaxQueueSize %d", o.MaxExportBatchSize, o.MaxQueueSize))
	}
	if o.ScheduleDelay == 0 {
		o.ScheduleDelay = DefaultScheduleDelay
	}
	if o.ExportTimeout == 0 {
		o.ExportTimeout = DefaultExportTimeout
	}
	if o.OnError == nil {
		o.OnError = otel.Handle
	}
	if err := errors.Join(errs...); err != nil {
		return BatchOptions{}, fmt.Errorf("tracing: BatchOptions: %w", err)
	}
	return o, nil
}

// BatchProcessor is an sdktrace.SpanProcessor that exports ended, sampled
// spans in batches from one goroutine, like the SDK's batch span
// processor (sdktrace.NewBatchSpanProcessor) and with the same options,
// but without a hand-off per span: a span that ends is appended to a
// bounded queue under a mutex, and the exporting goroutine is woken only
// when a batch is full, when ScheduleDelay has passed, and by ForceFlush
// and Shutdown. The SDK's processor sends every span over a channel to
// its goroutine, which on a busy server costs a goroutine wake-up per span
// (several microseconds of CPU, more than the span itself:
// docs/benchmarks.md).
//
// The exporter is called by one goroutine at a time, with a deadline of
// ExportTimeout, and must not keep the slice it is given. A span that
// ends while the queue is full, or after Shutdown, is dropped and counted.
//
// The exporting goroutine starts in NewBatchProcessor and ends in
// Shutdown, which must be called (a TracerProvider's Shutdown calls it).
type BatchProcessor struct {
	exp  sdktrace.SpanExporter
	opts BatchOptions

	mu       sync.Mutex
	queue    []sdktrace.ReadOnlySpan // at most opts.MaxQueueSize
	closed   bool
	dropped  atomic.Uint64
	reported uint64 // the drops OnError was told of; only the goroutine uses it

	full     chan struct{}      // capacity 1: the queue holds a full batch
	flushes  chan chan error    // ForceFlush: export everything queued, then reply
	shutdown chan shutdownOrder // Shutdown (once, so capacity 1): export everything queued, then end
	done     chan struct{}      // closed when the goroutine ends
}

// shutdownOrder is what Shutdown tells the exporting goroutine: the
// caller's context, which bounds the final exports, and where to reply.
type shutdownOrder struct {
	ctx   context.Context
	reply chan error
}

// NewBatchProcessor validates opts and returns a BatchProcessor exporting
// to exp, with its goroutine started.
func NewBatchProcessor(exp sdktrace.SpanExporter, opts BatchOptions) (*BatchProcessor, error) {
	if exp == nil {
		return nil, errors.New("tracing: NewBatchProcessor: the exporter is nil")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &BatchProcessor{
		exp:  exp,
		opts: opts,
		// The queue and the batch grow as spans come, from the defaults:
		// large bounds must not be allocated (or overflow) up front.
		queue:    make([]sdktrace.ReadOnlySpan, 0, min(opts.MaxQueueSize, DefaultMaxQueueSize)),
		full:     make(chan struct{}, 1),
		flushes:  make(chan chan error),
		shutdown: make(chan shutdownOrder, 1),
		done:     make(chan struct{}),
	}
	go p.run()
	return p, nil
}

// OnStart implements sdktrace.SpanProcessor; it does nothing.
func (p *BatchProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor: it queues s for export if it
// is sampled, or drops it if the queue is full or the processor is shut
// down.
func (p *BatchProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	p.mu.Lock()
	if p.closed || len(p.queue) == p.opts.MaxQueueSize {
		p.mu.Unlock()
		p.dropped.Add(1)
		return
	}
	p.queue = append(p.queue, s)
	full := len(p.queue) >= p.opts.MaxExportBatchSize
	p.mu.Unlock()
	if full {
		select {
		case p.full <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// Dropped returns how many sampled spans were dropped because the queue
// was full or the processor was shut down.
func (p *BatchProcessor) Dropped() uint64 { return p.dropped.Load() }

// ForceFlush implements sdktrace.SpanProcessor: it exports every span
// queued when it is called and returns the exporter's first error, or
// ctx's error if ctx ends first (the export then goes on in the
// background, within ExportTimeout). After Shutdown it does nothing.
func (p *BatchProcessor) ForceFlush(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case p.flushes <- reply:
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown implements sdktrace.SpanProcessor: it stops queuing spans,
// exports every span queued, within ctx and ExportTimeout, ends the
// exporting goroutine and shuts the exporter down. It returns the first
// error of those steps, or ctx's error if ctx ends first (the goroutine
// then ends once its export returns). Later calls return nil.
func (p *BatchProcessor) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	reply := make(chan error, 1)
	p.shutdown <- shutdownOrder{ctx: ctx, reply: reply} // buffered for this one order
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the exporting goroutine: it exports full batches as they fill,
// everything queued every ScheduleDelay and on ForceFlush, and ends after
// the final export of Shutdown.
func (p *BatchProcessor) run() {
	defer close(p.done)
	timer := time.NewTimer(p.opts.ScheduleDelay)
	defer timer.Stop()
	batch := make([]sdktrace.ReadOnlySpan, 0, min(p.opts.MaxExportBatchSize, DefaultMaxExportBatchSize))
	for {
		select {
		case <-p.full:
			batch = p.export(context.Background(), batch, false, p.opts.OnError)
		case <-timer.C:
			batch = p.export(context.Background(), batch, true, p.opts.OnError)
			timer.Reset(p.opts.ScheduleDelay)
		case reply := <-p.flushes:
			var first error
			batch = p.export(context.Background(), batch, true, func(err error) { first = cmp.Or(first, err) })
			reply <- first
		case order := <-p.shutdown:
			var first error
			p.export(order.ctx, batch, true, func(err error) { first = cmp.Or(first, err) })
			p.mu.Lock()
			p.dropped.Add(uint64(len(p.queue))) // left by an export cut short by ctx
			p.queue = nil
			p.mu.Unlock()
			first = cmp.Or(first, p.exp.Shutdown(order.ctx))
			order.reply <- first
			return
		}
	}
}

// export takes the spans queued now from the queue, in batches of at
// most MaxExportBatchSize, and exports each batch: all of them if all is
// set, otherwise only full batches. Spans queued meanwhile wait for the
// next call, so that a steady stream of spans cannot keep the goroutine
// from its other work. It returns batch, emptied, for reuse, and passes
// every export error to report. It stops early when ctx ends.
func (p *BatchProcessor) export(ctx context.Context, batch []sdktrace.ReadOnlySpan, all bool, report func(error)) []sdktrace.ReadOnlySpan {
	p.mu.Lock()
	todo := len(p.queue)
	p.mu.Unlock()
	if !all {
		todo -= todo % p.opts.MaxExportBatchSize
	}
	for todo > 0 && ctx.Err() == nil {
		p.mu.Lock()
		n := min(len(p.queue), p.opts.MaxExportBatchSize, todo)
		batch = append(batch[:0], p.queue[:n]...)
		rest := copy(p.queue, p.queue[n:])
		clear(p.queue[rest:])
		p.queue = p.queue[:rest]
		p.mu.Unlock()
		todo -= n

		ectx, cancel := context.WithTimeout(ctx, p.opts.ExportTimeout)
		err := p.exp.ExportSpans(ectx, batch)
		cancel()
		clear(batch)
		if err != nil {
			report(fmt.Errorf("tracing: exporting %d spans: %w", n, err))
		}
	}
	if d := p.dropped.Load(); d > p.reported {
		p.opts.OnError(fmt.Errorf("tracing: %d spans dropped: the export queue (%d spans) was full", d-p.reported, p.opts.MaxQueueSize))
		p.reported = d
	}
	return batch
}
