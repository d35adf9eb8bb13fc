package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DefaultServiceName is the service.name of a provider built from the
// environment when OTEL_SERVICE_NAME (or service.name in
// OTEL_RESOURCE_ATTRIBUTES) names none.
const DefaultServiceName = "taskwire"

// NewProviderFromEnv returns a TracerProvider that exports spans with
// OTLP over HTTP, configured by the standard OpenTelemetry environment
// variables, or nil (and no error) when they ask for no export: when
// neither OTEL_EXPORTER_OTLP_ENDPOINT nor
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or OTEL_SDK_DISABLED is
// "true", or OTEL_TRACES_EXPORTER is "none". A nil provider means: trace
// nothing, at no cost.
//
// The exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, compression, certificates; an http:// endpoint is sent in
// clear text), the provider OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG, the batch processor (a BatchProcessor)
// OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT, OTEL_BSP_MAX_QUEUE_SIZE
// and OTEL_BSP_MAX_EXPORT_BATCH_SIZE, and the resource OTEL_SERVICE_NAME
// and OTEL_RESOURCE_ATTRIBUTES, all from the process environment. A
// batch processor variable that is set but not a positive integer, or a
// batch size above the queue size, is an error.
//
// The caller must Shutdown the provider, with a deadline, to flush the
// spans still batched.
func NewProviderFromEnv(ctx context.Context) (*sdktrace.TracerProvider, error) {
	getenv := os.Getenv
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return nil, nil
	}
	bopts, err := batchOptionsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	bp, err := NewBatchProcessor(exp, bopts)
	if err != nil {
		exp.Shutdown(ctx)
		return nil, err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bp), sdktrace.WithResource(res)), nil
}

// batchOptionsFromEnv reads the batch span processor's variables of the
// OpenTelemetry specification: OTEL_BSP_SCHEDULE_DELAY and
// OTEL_BSP_EXPORT_TIMEOUT in milliseconds, OTEL_BSP_MAX_QUEUE_SIZE and
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE. An unset or empty variable takes the
// default; any other value that is not a positive integer is an error.
func batchOptionsFromEnv(getenv func(string) string) (BatchOptions, error) {
	var o BatchOptions
	var errs []error
	read := func(name string) int {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q is not a positive integer", name, v))
			return 0
		}
		return n
	}
	o.ScheduleDelay = time.Duration(read("OTEL_BSP_SCHEDULE_DELAY")) * time.Millisecond
	o.ExportTimeout = time.Duration(read("OTEL_BSP_EXPORT_TIMEOUT")) * time.Millisecond
	o.MaxQueueSize = read("OTEL_BSP_MAX_QUEUE_SIZE")
	o.MaxExportBatchSize = read("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
	if err := errors.Join(errs...); err != nil {
		return BatchOptions{}, fmt.Errorf("tracing: %w", err)
	}
	if _, err := o.withDefaults(); err != nil {
		return BatchOptions{}, err
	}
	return o, nil
}
