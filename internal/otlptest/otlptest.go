// Package otlptest is a loopback OTLP/HTTP trace receiver for tests: it
// accepts POST /v1/traces (protobuf, optionally gzip) and keeps what the
// spans it was sent say about names, IDs, links and services.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds one export request.
const maxBody = 4 << 20

// Span is what the receiver keeps of one span.
type Span struct {
	Service string
	Name    string
	TraceID string // hex
	SpanID  string // hex
	// Links are the span IDs (hex) of the spans it links to.
	Links []string
}

// Receiver is an OTLP/HTTP trace receiver on a loopback httptest.Server.
type Receiver struct {
	// URL is the base URL to set OTEL_EXPORTER_OTLP_ENDPOINT to.
	URL string

	mu       sync.Mutex
	requests int
	spans    []Span
}

// Start starts a Receiver, closed when t ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	ts := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(ts.Close)
	r.URL = ts.URL
	return r
}

// Requests returns how many export requests were accepted.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Spans returns the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Named returns the received spans named name.
func (r *Receiver) Named(name string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, maxBody)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = io.LimitReader(zr, maxBody)
	}
	data, err := io.ReadAll(body)
	var export coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(data, &export)
	}
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range export.ResourceSpans {
		var service string
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{Service: service, Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId)}
				for _, l := range s.Links {
					sp.Links = append(sp.Links, hex.EncodeToString(l.SpanId))
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.requests++
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}
