package tracing

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestBatchOptionsFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    BatchOptions
		wantErr string
	}{
		{name: "unset", env: nil, want: BatchOptions{}},
		{name: "all set", env: map[string]string{
			"OTEL_BSP_SCHEDULE_DELAY": "250", "OTEL_BSP_EXPORT_TIMEOUT": " 1000 ",
			"OTEL_BSP_MAX_QUEUE_SIZE": "4096", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1024",
		}, want: BatchOptions{ScheduleDelay: 250 * time.Millisecond, ExportTimeout: time.Second, MaxQueueSize: 4096, MaxExportBatchSize: 1024}},
		{name: "empty is unset", env: map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": ""}, want: BatchOptions{}},
		{name: "not a number", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "5s"}, wantErr: `OTEL_BSP_SCHEDULE_DELAY="5s" is not a positive integer`},
		{name: "zero", env: map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, wantErr: `OTEL_BSP_MAX_QUEUE_SIZE="0" is not a positive integer`},
		{name: "negative", env: map[string]string{"OTEL_BSP_EXPORT_TIMEOUT": "-1"}, wantErr: `OTEL_BSP_EXPORT_TIMEOUT="-1" is not a positive integer`},
		{name: "batch above queue", env: map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "200"},
			wantErr: "MaxExportBatchSize 200 exceeds MaxQueueSize 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := batchOptionsFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(BatchOptions{}, "OnError")); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewProviderFromEnvRejectsBadBatchVariables checks that a bad
// OTEL_BSP_* value stops NewProviderFromEnv, naming the variable, rather
// than being ignored.
func TestNewProviderFromEnvRejectsBadBatchVariables(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "lots")
	tp, err := NewProviderFromEnv(t.Context())
	if err == nil || !strings.Contains(err.Error(), "OTEL_BSP_MAX_EXPORT_BATCH_SIZE") {
		t.Errorf("NewProviderFromEnv = %v, %v; want an error naming OTEL_BSP_MAX_EXPORT_BATCH_SIZE", tp, err)
	}
}
