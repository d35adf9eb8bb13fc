package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

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
// OTEL_TRACES_SAMPLER_ARG, the batch processor OTEL_BSP_*, and the
// resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, all from the
// process environment.
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
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
